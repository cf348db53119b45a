package server

import (
	"net/http"
	"net/textproto"
	"testing"

	"google.golang.org/grpc/metadata"
)

// copyHeaders writes the headers Switchyard owns from every metadata the
// handlers set, under canonical names, a key's first value winning.
func TestCopyHeaders(t *testing.T) {
	cases := []struct {
		name string
		mds  []metadata.MD
		want http.Header
	}{
		{"one", []metadata.MD{metadata.Pairs(mdRequestID, "r1", "x-private", "no")},
			http.Header{"X-Request-Id": {"r1"}}},
		{"later ones add keys", []metadata.MD{metadata.Pairs(mdRequestID, "r1"), metadata.Pairs(mdCost, "0.5"),
			metadata.Pairs(mdPromptTokens, "7", mdTarget, "up/m")},
			http.Header{"X-Request-Id": {"r1"}, "X-Switchyard-Cost-Usd": {"0.5"}, "X-Switchyard-Prompt-Tokens": {"7"},
				"X-Switchyard-Target": {"up/m"}}},
		{"the first value wins", []metadata.MD{metadata.Pairs(mdTarget, "a/1"), metadata.Pairs(mdTarget, "b/2"),
			metadata.Pairs(mdTarget, "c/3", mdLimitTokens, "9")},
			http.Header{"X-Switchyard-Target": {"a/1"}, "X-Ratelimit-Limit-Tokens": {"9"}}},
		{"an empty first", []metadata.MD{{}, metadata.Pairs(mdResetRequests, "1s")},
			http.Header{"X-Ratelimit-Reset-Requests": {"1s"}}},
		{"a key without values is none", []metadata.MD{{mdTarget: {}}, metadata.Pairs(mdTarget, "b/2")},
			http.Header{"X-Switchyard-Target": {"b/2"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sink := &headerSink{}
			for _, md := range tc.mds {
				if err := sink.SetHeader(md); err != nil {
					t.Fatal(err)
				}
			}
			w := &discard{h: http.Header{}}
			copyHeaders(w, sink)
			if len(w.h) != len(tc.want) {
				t.Fatalf("headers %v, want %v", w.h, tc.want)
			}
			for k, v := range tc.want {
				if got := w.h[k]; len(got) != 1 || got[0] != v[0] {
					t.Fatalf("%s: %q, want %q (all: %v)", k, got, v, w.h)
				}
			}
		})
	}
}

// Every metadata key with a REST header is named canonically, so that writing
// it allocates no name.
func TestOutgoingHeaderNamesAreCanonical(t *testing.T) {
	keys := []string{mdTarget, mdRequestID, mdLimitRequests, mdLimitTokens, mdRemainingRequests, mdRemainingTokens,
		mdResetRequests, mdResetTokens}
	for k := range usageHeaders {
		keys = append(keys, k)
	}
	for _, k := range keys {
		t.Run(k, func(t *testing.T) {
			name, ok := outgoingHeader(k)
			if !ok || name != textproto.CanonicalMIMEHeaderKey(k) {
				t.Fatalf("%s is sent as %q (%v), want %q", k, name, ok, textproto.CanonicalMIMEHeaderKey(k))
			}
		})
	}
}
