package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/keys"
	"github.com/switchyard/switchyard/limits"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
)

// instantProvider answers every chat at once, so that a benchmark measures
// Switchyard's own work.
type instantProvider struct{}

func (instantProvider) Name() string                             { return "up" }
func (instantProvider) Models(context.Context) ([]string, error) { return []string{"m"}, nil }
func (instantProvider) Stream(context.Context, *providers.Request) (providers.Stream, error) {
	return nil, errors.New("no streams")
}
func (instantProvider) Chat(context.Context, *providers.Request) (*pb.ChatCompletion, error) {
	return &pb.ChatCompletion{Id: "c1", Object: "chat.completion", Model: "m",
		Choices: []*pb.Choice{{Message: &pb.ChatMessage{Role: "assistant"}, FinishReason: proto.String("stop")}},
		Usage:   &pb.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}, nil
}

// BenchmarkLimitCheck is the cost of a virtual key's admission (auth, allowlist,
// rpm + tpm + max_concurrency on the embedded backend, headers, release) per
// REST chat request, against the same request with the master key (no limits).
// The ratio of limited to master is the cost of limits; see README, Performance.
func BenchmarkLimitCheck(b *testing.B) {
	reg, err := keys.NewRegistry(context.Background(), keys.NewMemoryStore(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	_, open, _ := reg.Create(context.Background(), keys.Spec{Name: "open", Models: []string{"up/m"}})
	_, limited, _ := reg.Create(context.Background(), keys.Spec{Name: "limited", Models: []string{"up/m"},
		Limits: limits.Limits{RPM: 1 << 30, TPM: 1 << 30, MaxConcurrency: 1 << 20}})
	srv, err := New(Config{Log: slog.New(slog.DiscardHandler), MaxBodyBytes: 1 << 20,
		Router:      router.New(slog.New(slog.DiscardHandler), []router.Target{{Provider: instantProvider{}, Configured: []string{"m"}}}),
		Keys:        Keys{Master: "sk-master"},
		VirtualKeys: reg, Limiter: limits.New(limits.NewMemory(), nil), KeyMetrics: true})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.http.Handler
	for _, bc := range []struct{ name, key string }{
		{"master_key", "sk-master"}, {"virtual_key_no_limits", open}, {"virtual_key_rpm_tpm_concurrency", limited},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(chatJSON+`}`))
				req.Header.Set("Authorization", "Bearer "+bc.key)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
