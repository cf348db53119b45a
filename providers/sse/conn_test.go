package sse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/switchyard/switchyard/providers"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(body io.ReadCloser) *Conn {
	ctx, cancel := context.WithCancelCause(context.Background())
	if pr, ok := body.(*io.PipeReader); ok {
		// As an HTTP response body does, the pipe ends when the request's context does.
		go func() { <-ctx.Done(); pr.CloseWithError(ctx.Err()) }()
	}
	c := NewConn(ctx, cancel, body)
	c.Provider = "p"
	c.Secrets = providers.SecretsOf("", nil, "sk-secret-key")
	return c
}

// TestConnNextEnds: how a started stream ends, for every way it can stop.
func TestConnNextEnds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		in       string
		finished bool
		kind     string // "" = clean io.EOF
	}{
		{"clean end after the final event", "data: a\n\n", true, ""},
		{"end before the final event", "data: a\n\n", false, providers.StreamClosedEarly},
		{"cut event", "data: a\n\ndata: {", false, providers.StreamClosedEarly},
		// After the final event the answer is whole: a cut, an unreadable event
		// or a stall does not unmake it (SPEC: it stays complete).
		{"cut event after the final one", "data: a\n\ndata: {", true, ""},
		{"oversized event after the final one", "data: a\n\ndata: " + strings.Repeat("x", providers.MaxResponseBytes) + "\n\n", true, ""},
		{"oversized event", "data: a\n\ndata: " + strings.Repeat("x", providers.MaxResponseBytes) + "\n\n", false, providers.StreamMalformedChunk},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := open(io.NopCloser(strings.NewReader(tc.in)))
			ev, err := c.Next(tc.finished)
			require.NoError(t, err)
			require.Equal(t, "a", string(ev.Data))
			_, err = c.Next(tc.finished)
			if tc.kind == "" {
				require.ErrorIs(t, err, io.EOF)
			} else {
				var se *providers.StreamError
				require.ErrorAs(t, err, &se)
				require.ErrorIs(t, err, providers.ErrStreamIncomplete)
				require.Equal(t, tc.kind, se.Kind)
				require.Equal(t, "p", se.Provider)
			}
			require.True(t, c.Done())
			_, err = c.Next(tc.finished)
			require.ErrorIs(t, err, io.EOF, "an ended stream reads nothing more")
		})
	}
}

// failingBody fails its reads with err, quoting a secret.
type failingBody struct{ err error }

func (b failingBody) Read([]byte) (int, error) { return 0, b.err }
func (b failingBody) Close() error             { return nil }

func TestConnReadErrorIsRedacted(t *testing.T) {
	t.Parallel()
	c := open(failingBody{errors.New("reset by sk-secret-key")})
	_, err := c.Next(false)
	var se *providers.StreamError
	require.ErrorAs(t, err, &se)
	require.Equal(t, providers.StreamReadError, se.Kind)
	require.NotContains(t, err.Error(), "sk-secret-key")
	require.Contains(t, err.Error(), "[redacted]")
}

// TestConnIdle: a started stream silent past its idle timer is stalled (a local
// timeout); after its final event, a stall waiting for [DONE] or the usage
// chunk ends it cleanly (the answer is whole).
func TestConnIdle(t *testing.T) {
	t.Parallel()
	for _, finished := range []bool{false, true} {
		t.Run(fmt.Sprint("finished ", finished), func(t *testing.T) {
			t.Parallel()
			pr, pw := io.Pipe()
			c := open(pr)
			defer c.Close()
			go func() { _, _ = io.WriteString(pw, "data: a\n\n") }()
			_, err := c.Next(false)
			require.NoError(t, err)
			c.StartIdle(30 * time.Millisecond) // armed once the stream is handed on
			_, err = c.Next(finished)          // nothing more is written
			if finished {
				require.ErrorIs(t, err, io.EOF)
				return
			}
			var se *providers.StreamError
			require.ErrorAs(t, err, &se)
			require.Equal(t, providers.StreamStalled, se.Kind)
			require.True(t, se.LocalTimeout())
		})
	}
}

// TestConnCallerLeaves: the caller's context ending is its own error, not an
// incomplete stream, finished or not.
func TestConnCallerLeaves(t *testing.T) {
	t.Parallel()
	for _, finished := range []bool{false, true} {
		pr, _ := io.Pipe()
		parent, leave := context.WithCancel(context.Background())
		ctx, cancel := context.WithCancelCause(parent)
		c := NewConn(ctx, cancel, pr)
		go func() { leave(); pr.CloseWithError(context.Canceled) }()
		_, err := c.Next(finished)
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, providers.ErrStreamIncomplete)
	}
}

// TestConnFirst: before the first content, failures are plain errors with a status.
func TestConnFirst(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		body   io.ReadCloser
		status int
		kind   string
		code   string
	}{
		{"empty stream", io.NopCloser(strings.NewReader(": only a comment\n\n")), http.StatusBadGateway, providers.KindEmptyStream, "empty_response"},
		{"oversized event", io.NopCloser(strings.NewReader("data: " + strings.Repeat("x", providers.MaxResponseBytes) + "\n\n")),
			http.StatusBadGateway, providers.KindUnreadable, "upstream_unreadable"},
		{"cut", io.NopCloser(strings.NewReader("data: {")), http.StatusBadGateway, "", ""},
		{"read failure quoting the key", failingBody{errors.New("boom sk-secret-key")}, http.StatusBadGateway, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := open(tc.body)
			defer c.Close()
			_, err := c.First(providers.Timeouts{})
			var pe *providers.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tc.status, pe.Status)
			require.Equal(t, tc.kind, pe.Kind)
			require.Equal(t, tc.code, pe.Code)
			require.NotContains(t, pe.Message, "sk-secret-key")
		})
	}
}

// TestDeadline: the first-token deadline ends the attempt as a first-token
// timeout (504, retried like a transport failure); stopped in time it does nothing.
func TestDeadline(t *testing.T) {
	t.Parallel()
	t.Run("fires", func(t *testing.T) {
		pr, _ := io.Pipe()
		ctx, cancel := context.WithCancelCause(context.Background())
		c := NewConn(ctx, cancel, pr)
		c.Provider = "p"
		d := StartDeadline(20*time.Millisecond, func(cause error) { cancel(cause); pr.CloseWithError(cause) })
		_, err := c.First(providers.Timeouts{FirstToken: 20 * time.Millisecond})
		require.False(t, d.Stop())
		var pe *providers.Error
		require.ErrorAs(t, err, &pe)
		require.True(t, pe.FirstTokenTimeout())
		require.Equal(t, http.StatusGatewayTimeout, pe.Status)
		require.Contains(t, pe.Message, "first_token_timeout")
		require.Equal(t, err.Error(), c.Crossed(providers.Timeouts{FirstToken: 20 * time.Millisecond}).Error())
		c.Close()
	})
	t.Run("stopped in time", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		d := StartDeadline(time.Hour, cancel)
		require.True(t, d.Stop())
		require.NoError(t, ctx.Err())
	})
	t.Run("none", func(t *testing.T) {
		require.True(t, StartDeadline(0, nil).Stop())
	})
}
