package server

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// deadlineRecorder is a response writer that notes the write deadlines set on it.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	set []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.set = append(d.set, t)
	return nil
}

// A stream's write deadline (the front's boundedWriter, which bounds every REST
// write) is set before its first event and moved again only
// once a sixteenth of the timeout has passed: every write has at least 15/16 of
// the timeout before it, and events in quick succession set it once.
func TestSSEWriteDeadlineIsMovedOncePerSixteenth(t *testing.T) {
	const timeout = 160 * time.Millisecond
	cases := []struct {
		name  string
		gaps  []time.Duration // clock advance before each event after the first
		wants int             // deadlines set
	}{
		{"a burst", []time.Duration{0, time.Millisecond, time.Millisecond}, 1},
		{"just under a sixteenth apart", []time.Duration{9 * time.Millisecond, 0}, 1},
		{"a sixteenth apart", []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}, 3},
		{"slow and steady", []time.Duration{time.Second, time.Second}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Unix(1000, 0)
			rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			bw := boundWrites(rec, timeout) // as the front wraps every request
			bw.d.now = func() time.Time { return clock }
			s := newSSEStream(bw, &headerSink{})
			require.NoError(t, s.SendRaw([]byte(`{}`)))
			for _, gap := range tc.gaps {
				clock = clock.Add(gap)
				require.NoError(t, s.SendRaw([]byte(`{}`)))
				last := rec.set[len(rec.set)-1]
				require.GreaterOrEqual(t, last.Sub(clock), timeout-timeout/16, "the write has at least 15/16 of the timeout")
			}
			require.Len(t, rec.set, tc.wants)
		})
	}
}
