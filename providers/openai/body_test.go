package openai

import (
	"bytes"
	"testing"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
	"github.com/switchyard/switchyard/providers"
)

// smallChat is a short REST chat request, its conversation kept as it arrived.
func smallChat(t testing.TB) *pb.ChatCompletionRequest {
	var body pb.ChatCompletionRequest
	if err := openaijson.UnmarshalChat([]byte(`{"model":"up/gpt-4o","messages":[{"role":"system","content":"You are a helpful assistant."},`+
		`{"role":"user","content":"Say hello to the world in one short sentence."}],"stream":true,"temperature":0.2}`), &body); err != nil {
		t.Fatal(err)
	}
	return &body
}

// TestUpstreamBodyAllocations holds a short request's upstream body to its
// allocation ceiling (the request is neither copied nor changed): a regression
// fails here without timing anything.
func TestUpstreamBodyAllocations(t *testing.T) {
	body := smallChat(t)
	c := &Client{name: "up"}
	req := &providers.Request{Body: body, Attempt: providers.Attempt{Model: "gpt-4o", IncludeUsage: true}}
	got := bytes.Join(c.upstreamBody(req, true), nil)
	want := `{"model":"gpt-4o","temperature":0.2,"stream":true,"stream_options":{"include_usage":true},` +
		`"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello to the world in one short sentence."}]}`
	if string(got) != want {
		t.Fatalf("upstream body\n%s\nwant\n%s", got, want)
	}
	if body.Model != "up/gpt-4o" || body.StreamOptions != nil {
		t.Fatalf("the client's request was changed: %v", body)
	}
	if n := testing.AllocsPerRun(100, func() { _ = c.upstreamBody(req, true) }); n > 12 {
		t.Errorf("%.0f allocations, ceiling 12", n)
	}
}

// TestUpstreamBodyOfNoRequest: a request without a body (none is sent so, but
// the old copy took it) is written as an empty one with the upstream's members.
func TestUpstreamBodyOfNoRequest(t *testing.T) {
	c := &Client{name: "up"}
	got := bytes.Join(c.upstreamBody(&providers.Request{Attempt: providers.Attempt{Model: "m"}}, false), nil)
	if want := `{"model":"m","stream":false}`; string(got) != want {
		t.Fatalf("upstream body %s, want %s", got, want)
	}
}

func BenchmarkUpstreamBody(b *testing.B) {
	c := &Client{name: "up"}
	req := &providers.Request{Body: smallChat(b), Attempt: providers.Attempt{Model: "gpt-4o", IncludeUsage: true}}
	b.ReportAllocs()
	for b.Loop() {
		_ = c.upstreamBody(req, true)
	}
}
