package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/internal/fakeupstream"
)

// startEmbeddings runs Switchyard with provider "emb" (an embeddings upstream,
// key sk-emb), the simulator as "sim" (8 dimensions), and extra YAML.
func startEmbeddings(t *testing.T, serverYAML, extra string) (*gateway, *fakeupstream.Embeddings) {
	t.Helper()
	emb := fakeupstream.NewEmbeddings()
	t.Cleanup(emb.Close)
	g := start(t, serverYAML, withYAML("  emb:\n    type: openai\n    base_url: "+emb.URL+"\n    api_key: sk-emb\n"+
		"  sim:\n    type: simulator\n    simulator:\n      dimensions: 8\n"+extra))
	return g, emb
}

func float64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return out
}

func TestEmbeddingsGoSDKFloatAndBase64(t *testing.T) {
	t.Parallel()
	g, emb := startEmbeddings(t, "", "")
	c := sdk(g, "k")
	var raw *http.Response
	resp, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "emb/text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello", "world"}},
		User:  openai.String("u-1"),
	}, option.WithJSONSet("custom_flag", true), option.WithResponseInto(&raw))
	require.NoError(t, err)
	require.Len(t, resp.Data, 2)
	require.Equal(t, float64s(fakeupstream.EmbeddingVector(0)), resp.Data[0].Embedding)
	require.Equal(t, float64s(fakeupstream.EmbeddingVector(1)), resp.Data[1].Embedding)
	require.Equal(t, int64(1), resp.Data[1].Index)
	require.Equal(t, int64(8), resp.Usage.PromptTokens)
	require.Equal(t, int64(8), resp.Usage.TotalTokens)
	require.Equal(t, "text-embedding-3-small", resp.Model)
	require.Equal(t, "emb/text-embedding-3-small", raw.Header.Get("X-Switchyard-Target"))

	reqs := emb.Requests()
	require.Len(t, reqs, 1)
	body := reqs[0].JSON()
	require.Equal(t, "text-embedding-3-small", body["model"], "the upstream receives the provider-local name")
	require.Equal(t, []any{"hello", "world"}, body["input"])
	require.Equal(t, "u-1", body["user"])
	require.Equal(t, true, body["custom_flag"], "unknown members reach the upstream")
	require.Equal(t, "Bearer sk-emb", reqs[0].Header.Get("Authorization"))

	// base64: the upstream's string is relayed as it came.
	resp, err = c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model:          "text-embedding-3-small", // a bare name
		Input:          openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello")},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64,
	})
	require.NoError(t, err)
	require.Len(t, resp.Data, 1)
	require.Equal(t, `"`+fakeupstream.EmbeddingBase64(0)+`"`, resp.Data[0].JSON.Embedding.Raw())
	require.Equal(t, "base64", emb.Requests()[1].JSON()["encoding_format"])
	require.Equal(t, "hello", emb.Requests()[1].JSON()["input"])
}

func TestEmbeddingsTokenInputsReachTheUpstreamInTheirShape(t *testing.T) {
	t.Parallel()
	g, emb := startEmbeddings(t, "", "")
	c := sdk(g, "k")
	_, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb/text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: [][]int64{{1, 2}, {3}}}})
	require.NoError(t, err)
	resp, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb/text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: []int64{7, 8, 9}}, Dimensions: openai.Int(3)})
	require.NoError(t, err)
	require.Len(t, resp.Data, 1)
	reqs := emb.Requests()
	require.Equal(t, `[[1,2],[3]]`, rawMember(t, reqs[0].Body, "input"))
	require.Equal(t, `[7,8,9]`, rawMember(t, reqs[1].Body, "input"))
	require.Equal(t, `3`, rawMember(t, reqs[1].Body, "dimensions"))
}

func rawMember(t *testing.T, body []byte, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	return string(m[key])
}

func TestEmbeddingsGeneratedGRPCClient(t *testing.T) {
	t.Parallel()
	g, emb := startEmbeddings(t, "  master_key: sk-master\n", "")
	c := pb.NewEmbeddingServiceClient(g.conn)
	req := &pb.CreateEmbeddingsRequest{Model: "emb/text-embedding-3-small",
		Input: &pb.EmbeddingInput{Kind: &pb.EmbeddingInput_Texts{Texts: &pb.StringList{Values: []string{"a", "b"}}}}}
	_, err := c.CreateEmbeddings(context.Background(), req)
	require.Equal(t, codes.Unauthenticated, status.Code(err), "the same key as chat")

	var header metadata.MD
	resp, err := c.CreateEmbeddings(withKey("sk-master"), req, grpc.Header(&header))
	require.NoError(t, err)
	require.Len(t, resp.GetData(), 2)
	require.Equal(t, fakeupstream.EmbeddingVector(1), resp.GetData()[1].GetEmbedding())
	require.Equal(t, int32(8), resp.GetUsage().GetPromptTokens())
	require.Equal(t, []string{"emb/text-embedding-3-small"}, header.Get("x-switchyard-target"))

	format := "base64"
	req.EncodingFormat = &format
	resp, err = c.CreateEmbeddings(withKey("sk-master"), req)
	require.NoError(t, err)
	require.Equal(t, fakeupstream.EmbeddingBase64(0), resp.GetData()[0].GetEmbeddingBase64())
	require.Empty(t, resp.GetData()[0].GetEmbedding())

	_, err = c.CreateEmbeddings(withKey("sk-master"), &pb.CreateEmbeddingsRequest{Model: "emb/text-embedding-3-small"})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "no input")
	require.Len(t, emb.Requests(), 2)

	require.True(t, strings.Contains(g.logs.String(), `"method":"CreateEmbeddings"`), "the request line names the method")
}

func TestEmbeddingsGrpcurl(t *testing.T) {
	t.Parallel()
	g, _ := startEmbeddings(t, "", "")
	out := grpcurl(t, "-plaintext", "-d", `{"model":"sim/sim-embed-1","input":{"text":"hello"},"dimensions":4}`,
		g.app.GRPCAddr(), "switchyard.v1.EmbeddingService/CreateEmbeddings")
	var resp struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Model string `json:"model"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &resp), out)
	require.Len(t, resp.Data, 1)
	require.Len(t, resp.Data[0].Embedding, 4, "the request's dimensions")
	require.Equal(t, "sim-embed-1", resp.Model)
	require.Contains(t, grpcurl(t, "-plaintext", g.app.GRPCAddr(), "list"), "switchyard.v1.EmbeddingService")
}

func TestEmbeddingsFailOverAlongAChain(t *testing.T) {
	t.Parallel()
	bad := fakeupstream.NewEmbeddings()
	t.Cleanup(bad.Close)
	g, emb := startEmbeddings(t, "", "  bad:\n    type: openai\n    base_url: "+bad.URL+"\n"+
		"    resilience:\n      retry:\n        max_retries: 0\n"+
		"virtual_models:\n  - source: embed\n    strategy: failover\n    targets:\n"+
		"      - model: bad/text-embedding-3-small\n      - model: emb/text-embedding-3-small\n")
	bad.Script(fakeupstream.Reply{Status: 503})
	var raw *http.Response
	resp, err := sdk(g, "k").Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "embed",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")}}, option.WithResponseInto(&raw))
	require.NoError(t, err)
	require.Equal(t, float64s(fakeupstream.EmbeddingVector(0)), resp.Data[0].Embedding)
	require.Equal(t, "emb/text-embedding-3-small", raw.Header.Get("X-Switchyard-Target"))
	require.Len(t, bad.Requests(), 1, "the first target answered 503 once")
	require.Len(t, emb.Requests(), 1, "the second answered")
	require.True(t, strings.Contains(g.logs.String(), `"failovers":1`), "the request line counts the failover")
}

func TestEmbeddingsSimulatorIsDeterministic(t *testing.T) {
	t.Parallel()
	g, _ := startEmbeddings(t, "", "")
	c := sdk(g, "k")
	embed := func(input string, dims int64) []float64 {
		p := openai.EmbeddingNewParams{Model: "sim/sim-embed-1", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(input)}}
		if dims > 0 {
			p.Dimensions = openai.Int(dims)
		}
		resp, err := c.Embeddings.New(context.Background(), p)
		require.NoError(t, err)
		require.Equal(t, int64(2), resp.Usage.PromptTokens, "a token per word")
		return resp.Data[0].Embedding
	}
	a := embed("hello there", 0)
	require.Len(t, a, 8, "the simulator's configured dimensions")
	require.Equal(t, a, embed("hello there", 0), "the same input gives the same vector")
	require.NotEqual(t, a, embed("other text", 0))
	require.Len(t, embed("hello there", 5), 5)
	var norm float64
	for _, f := range a {
		norm += f * f
	}
	require.InDelta(t, 1, norm, 1e-5, "a unit vector")
}

func TestEmbeddingsErrors(t *testing.T) {
	t.Parallel()
	g, emb := startEmbeddings(t, "", "")
	post := func(body string) (int, string) {
		resp, err := http.Post(g.base+"/embeddings", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	cases := []struct {
		name, body, param string
		status            int
	}{
		{"no model", `{"input":"x"}`, "model", 400},
		{"no input", `{"model":"emb/text-embedding-3-small"}`, "input", 400},
		{"empty input", `{"model":"emb/text-embedding-3-small","input":[]}`, "input", 400},
		{"mixed input", `{"model":"emb/text-embedding-3-small","input":["a",1]}`, "input[1]", 400},
		{"object input", `{"model":"emb/text-embedding-3-small","input":{"a":1}}`, "input", 400},
		{"bad format", `{"model":"emb/text-embedding-3-small","input":"x","encoding_format":"hex"}`, "encoding_format", 400},
		{"unknown model", `{"model":"nope","input":"x"}`, "model", 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(tc.body)
			require.Equal(t, tc.status, code, body)
			var e struct {
				Error struct{ Param string } `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &e), body)
			require.Equal(t, tc.param, e.Error.Param, body)
		})
	}
	require.Empty(t, emb.Requests(), "nothing reached the upstream")

	emb.Script(fakeupstream.Reply{Status: 400, Body: `{"error":{"message":"This model does not support specifying dimensions.",` +
		`"type":"invalid_request_error","param":"dimensions","code":null}}`})
	code, body := post(`{"model":"emb/text-embedding-3-small","input":"x","dimensions":2}`)
	require.Equal(t, 400, code)
	require.Contains(t, body, "does not support specifying dimensions", "the upstream's error, as chat relays it")
}

func TestModelsMarkEmbeddingModels(t *testing.T) {
	t.Parallel()
	g, _ := startEmbeddings(t, "", "")
	modes := modelModes(t, g)
	require.Equal(t, "embedding", modes["emb/text-embedding-3-small"], "by name")
	require.Equal(t, "embedding", modes["sim/sim-embed-1"], "the simulator's embedding model")
	require.Equal(t, "", modes["up/gpt-4o"])
	require.Equal(t, "", modes["sim/sim-1"])

	g, _ = startEmbeddings(t, "", "    embedding_models: [bge-m3]\n")
	modes = modelModes(t, g)
	require.Equal(t, "embedding", modes["sim/bge-m3"], "listed under embedding_models: %v", modes)
	require.NotContains(t, modes, "sim/sim-embed-1", "embedding_models replaces the simulator's default")
}

// modelModes reads GET /v1/models: each model's "mode".
func modelModes(t *testing.T, g *gateway) map[string]string {
	t.Helper()
	resp, err := http.Get(g.base + "/models")
	require.NoError(t, err)
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID   string `json:"id"`
			Mode string `json:"mode"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	modes := map[string]string{}
	for _, m := range list.Data {
		modes[m.ID] = m.Mode
	}
	return modes
}

// TestEmbeddingsNodeSDK runs e2e/node_embeddings with node's test runner: the
// Node SDK's embeddings.create (its default base64, float, base64 as a string).
func TestEmbeddingsNodeSDK(t *testing.T) {
	t.Parallel()
	_, err := os.Stat("../node_modules/openai/package.json")
	require.NoError(t, err, "the Node OpenAI SDK is missing: run the tests through `make test` (it runs npm ci)")
	g, emb := startEmbeddings(t, "  master_key: sk-node\n", "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", "node_embeddings/")
	cmd.Env = append(os.Environ(), "SWITCHYARD_BASE_URL="+g.base, "SWITCHYARD_KEY=sk-node")
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	require.NoError(t, err, "the Node SDK embeddings suite failed")
	reqs := emb.Requests()
	require.Len(t, reqs, 3, "each call reached the upstream once")
	require.Equal(t, "base64", reqs[0].JSON()["encoding_format"], "the SDK's default")
	require.Equal(t, "float", reqs[1].JSON()["encoding_format"])
}

// A virtual model whose first target is slow hedges embeddings (idempotent) as
// it hedges chat: the backup answers, the slow call is cancelled. Its /v1/models
// entry is an embedding model, as both its targets are; the request is counted
// under its own method in the metrics.
func TestEmbeddingsHedgeAndVirtualModelMode(t *testing.T) {
	t.Parallel()
	slow := fakeupstream.NewEmbeddings()
	t.Cleanup(slow.Close)
	g, emb := startEmbeddings(t, "", "  slow:\n    type: openai\n    base_url: "+slow.URL+"\n"+
		"virtual_models:\n  - source: embed-fast\n    strategy: failover\n    hedge_after: 50ms\n    targets:\n"+
		"      - model: slow/text-embedding-3-small\n      - model: emb/text-embedding-3-small\n")
	slow.Script(fakeupstream.Reply{Delay: 10 * time.Second})
	start := time.Now()
	var raw *http.Response
	resp, err := sdk(g, "k").Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "embed-fast",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")}}, option.WithResponseInto(&raw))
	require.NoError(t, err)
	require.Less(t, time.Since(start), 5*time.Second, "the backup answered, not the slow primary")
	require.Equal(t, float64s(fakeupstream.EmbeddingVector(0)), resp.Data[0].Embedding)
	require.Equal(t, "emb/text-embedding-3-small", raw.Header.Get("X-Switchyard-Target"))
	require.Len(t, slow.Requests(), 1)
	require.Len(t, emb.Requests(), 1)
	require.Contains(t, g.logs.String(), `"hedged":true`)

	require.Equal(t, "embedding", modelModes(t, g)["embed-fast"], "a virtual model of embedding models")

	m, err := http.Get(strings.TrimSuffix(g.base, "/v1") + "/metrics")
	require.NoError(t, err)
	defer m.Body.Close()
	metrics, _ := io.ReadAll(m.Body)
	require.Contains(t, string(metrics), `endpoint="CreateEmbeddings"`)
}

// A provider account's tpm is charged an embeddings call's estimate and then
// corrected by the tokens its answer says it used, as a chat call's is: here
// the estimate (~300 tokens for ~1.2 KB) is far above what the upstream
// reports (4), so a second call fits under tpm 400, which two estimates would
// not.
func TestEmbeddingsCorrectTheTargetsTPM(t *testing.T) {
	t.Parallel()
	emb := fakeupstream.NewEmbeddings()
	t.Cleanup(emb.Close)
	g := start(t, "", withYAML("  emb:\n    type: openai\n    base_url: "+emb.URL+"\n    api_key: sk-emb\n    limits: {tpm: 400}\n"))
	c := sdk(g, "k")
	input := strings.Repeat("a longer passage to embed ", 46) // ~1.2 KB
	for i := range 2 {
		_, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "emb/text-embedding-3-small",
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(input)}})
		require.NoError(t, err, "call %d", i+1)
	}
}

// An embeddings answer that reports its usage is recorded as reported, not as
// Switchyard's estimate.
func TestEmbeddingsUsageIsRecordedAsReported(t *testing.T) {
	t.Parallel()
	g, _ := startEmbeddings(t, keysYAML, "pricing:\n  emb/text-embedding-3-small: {input: 1, output: 0}\n")
	resp := post(t, g.base+"/embeddings", `{"model":"emb/text-embedding-3-small","input":["hello","world"]}`, "Authorization", "Bearer sk-master")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp.Body.Close()
	rec := waitRecords(t, g, 1)[0].(map[string]any)
	require.EqualValues(t, "8", rec["prompt_tokens"], "%v", rec)
	require.NotEqual(t, true, rec["tokens_estimated"], "the upstream reported its usage: %v", rec)
}
