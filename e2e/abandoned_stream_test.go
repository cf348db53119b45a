package e2e

import (
	"bufio"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// A client that leaves a stream is not a warning: it gets its request line (info,
// code Canceled) and nothing at warn; the stream's cut is logged at debug only.
// So whether its upstream was stalled (the gateway waiting on it) or fast (the
// gateway writing when the client left: a broken pipe, once a 500 and a WARN).
func TestAbandonedStreamIsNotAWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		upstream fakeupstream.Reply
	}{
		{"stalled upstream", fakeupstream.Reply{StallAfter: 2, Stall: time.Minute}},
		{"fast upstream, the write fails", fakeupstream.Reply{Text: strings.Repeat("word ", 200000), Burst: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := start(t, "")
			g.up.SetDefault(tc.upstream)
			resp := post(t, g.base+"/chat/completions", chatBody+`,"stream":true}`)
			require.Equal(t, 200, resp.StatusCode)
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(line, "data: "), line)
			resp.Body.Close() // the client goes away mid-stream
			require.Eventually(t, func() bool { return strings.Contains(g.logs.String(), `"msg":"request"`) },
				10*time.Second, 10*time.Millisecond)
			_, logs, _ := strings.Cut(g.logs.String(), `"msg":"Switchyard is serving"`) // the request's lines only
			require.Contains(t, logs, `"code":"Canceled"`)
			require.NotContains(t, logs, `"level":"WARN"`, logs)
		})
	}
}
