package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/providers/openai"
)

// recorder is an upstream that records each request and answers with handler.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func (rc *recorder) serve(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs, rc.body = append(rc.reqs, r), append(rc.body, string(b))
		rc.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const embeddingsAnswer = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.25]}],` +
	`"model":"text-embedding-3-small","usage":{"prompt_tokens":2,"total_tokens":2}}`

func embedReq() *pb.CreateEmbeddingsRequest {
	return &pb.CreateEmbeddingsRequest{Model: "client-name", Input: &pb.EmbeddingInput{Kind: &pb.EmbeddingInput_Text{Text: "hi"}}}
}

func TestEmbedURLs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		base      string // added to the server's URL
		az        *openai.Azure
		path      string
		query     string
		bodyModel string
		header    string // the credential header's name
	}{
		{name: "openai-compatible", base: "/v1", path: "/v1/embeddings", bodyModel: "emb", header: "Authorization"},
		{name: "azure deployment", az: &openai.Azure{Deployments: map[string]string{"emb": "my-emb"}},
			path: "/openai/deployments/my-emb/embeddings", query: "api-version=" + openai.DefaultAzureAPIVersion,
			bodyModel: "emb", header: "Api-Key"},
		{name: "azure v1 API", base: "/openai/v1", az: &openai.Azure{Deployments: map[string]string{"emb": "my-emb"}},
			path: "/openai/v1/embeddings", bodyModel: "my-emb", header: "Api-Key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := &recorder{}
			url := rc.serve(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, embeddingsAnswer) })
			c := openai.New(openai.Config{Name: "p", BaseURL: url + tc.base, APIKey: "sk-up", Azure: tc.az, Timeout: 5 * time.Second})
			t.Cleanup(c.Close)
			resp, err := c.Embed(context.Background(), providers.Attempt{Model: "emb", RequestID: "r1"}, embedReq())
			require.NoError(t, err)
			require.Equal(t, []float32{0.5, -0.25}, resp.GetData()[0].GetEmbedding())
			require.Len(t, rc.reqs, 1)
			r := rc.reqs[0]
			require.Equal(t, tc.path, r.URL.Path)
			require.Equal(t, tc.query, r.URL.RawQuery)
			require.Equal(t, `{"input":"hi","model":"`+tc.bodyModel+`"}`, rc.body[0])
			require.Contains(t, r.Header.Get(tc.header), "sk-up")
			require.Equal(t, "r1", r.Header.Get("X-Request-Id"))
		})
	}
}

func TestEmbedErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status int
		body   string
		want   int
		kind   string
	}{
		{"upstream 429", 429, `{"error":{"message":"slow down","type":"rate_limit_error"}}`, 429, ""},
		{"error hidden in a 200", 200, `{"error":{"message":"boom","code":503}}`, 503, providers.KindHiddenError},
		{"no embeddings", 200, `{"object":"list","data":[],"model":"m"}`, 502, providers.KindNoChoices},
		{"unreadable", 200, `{"data":[{"embedding":{}}]}`, 502, providers.KindUnreadable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := &recorder{}
			url := rc.serve(t, func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			c := openai.New(openai.Config{Name: "p", BaseURL: url})
			t.Cleanup(c.Close)
			_, err := c.Embed(context.Background(), providers.Attempt{Model: "emb"}, embedReq())
			var pe *providers.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tc.want, pe.Status)
			require.Equal(t, tc.kind, pe.Kind)
		})
	}
}

func TestForwardSendsThePathQueryAndBodyAsTheyCame(t *testing.T) {
	t.Parallel()
	rc := &recorder{}
	url := rc.serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/redirect" {
			http.Redirect(w, r, "/v1/elsewhere", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "short and stout")
	})
	c := openai.New(openai.Config{Name: "p", BaseURL: url + "/v1", APIKey: "sk-up", Headers: map[string]string{"X-Org": "o"}})
	t.Cleanup(c.Close)
	body := `{"b": 2,  "a":1}`
	in, err := http.NewRequest(http.MethodPost, "/files/a%2Fb?x=1&y=%20z&x=2", strings.NewReader(body))
	require.NoError(t, err)
	in.Header.Set("Content-Type", "application/x-custom")
	in.Header.Set("X-Client", "c")
	resp, err := c.Forward(context.Background(), providers.Attempt{RequestID: "r1"}, in)
	require.NoError(t, err)
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusTeapot, resp.StatusCode, "any status is an answer")
	require.Equal(t, "short and stout", string(got))

	r := rc.reqs[0]
	require.Equal(t, "/v1/files/a%2Fb", r.URL.EscapedPath(), "the path as the client escaped it")
	require.Equal(t, "x=1&y=%20z&x=2", r.URL.RawQuery, "the query byte for byte")
	require.Equal(t, body, rc.body[0], "the body byte for byte")
	require.Equal(t, "application/x-custom", r.Header.Get("Content-Type"), "the client's content type stands")
	require.Equal(t, "Bearer sk-up", r.Header.Get("Authorization"), "the provider's credentials")
	require.Equal(t, "o", r.Header.Get("X-Org"), "the provider's headers")
	require.Equal(t, "c", r.Header.Get("X-Client"))
	require.Equal(t, strings.TrimPrefix(url, "http://"), r.Host, "Host is the upstream's")
	require.Equal(t, "identity", r.Header.Get("Accept-Encoding"), "no transparent gzip: the client gets the upstream's bytes")

	in, _ = http.NewRequest(http.MethodGet, "/redirect", nil)
	resp, err = c.Forward(context.Background(), providers.Attempt{}, in)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode, "redirects are the client's to follow")
	require.Len(t, rc.reqs, 2)
}

// TestEmbeddingsMustAnswerEveryInput: an answer is the request's only when it
// has one embedding per input, at its index, in the encoding asked for;
// anything else is the upstream's unreadable answer (502), never a success.
func TestEmbeddingsMustAnswerEveryInput(t *testing.T) {
	t.Parallel()
	item := func(i int, emb string) string {
		return fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":%s}`, i, emb)
	}
	answer := func(items ...string) string {
		return `{"object":"list","data":[` + strings.Join(items, ",") + `],"model":"emb","usage":{"prompt_tokens":2,"total_tokens":2}}`
	}
	two := &pb.EmbeddingInput{Kind: &pb.EmbeddingInput_Texts{Texts: &pb.StringList{Values: []string{"a", "b"}}}}
	one := &pb.EmbeddingInput{Kind: &pb.EmbeddingInput_Text{Text: "a"}}
	cases := []struct {
		name   string
		input  *pb.EmbeddingInput
		format string
		answer string
		ok     bool
	}{
		{"one for one", one, "", answer(item(0, `[0.5]`)), true},
		{"two for two, in any order", two, "", answer(item(1, `[0.5]`), item(0, `[0.25]`)), true},
		{"base64 as asked", one, "base64", answer(item(0, `"AAAAPw=="`)), true},
		{"two for one", one, "", answer(item(0, `[0.5]`), item(1, `[0.5]`)), false},
		{"one for two", two, "", answer(item(0, `[0.5]`)), false},
		{"an index out of range", two, "", answer(item(0, `[0.5]`), item(5, `[0.5]`)), false},
		{"a negative index", two, "", answer(item(0, `[0.5]`), item(-1, `[0.5]`)), false},
		{"an index twice", two, "", answer(item(1, `[0.5]`), item(1, `[0.5]`)), false},
		{"an empty vector", one, "", answer(item(0, `[]`)), false},
		{"a string where numbers were asked for", one, "", answer(item(0, `"AAAAPw=="`)), false},
		{"numbers where base64 was asked for (the SDKs' default)", one, "base64", answer(item(0, `[0.5]`)), true},
		{"an empty vector where base64 was asked for", one, "base64", answer(item(0, `[]`)), false},
		{"a string that is not base64", one, "base64", answer(item(0, `"!!!not base64!!!"`)), false},
		{"base64 of no whole float32", one, "base64", answer(item(0, `"AAAA"`)), false},
		{"base64 of two float32s", one, "base64", answer(item(0, `"AAAAPwAAgD8="`)), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := &recorder{}
			url := rc.serve(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, tc.answer) })
			c := openai.New(openai.Config{Name: "p", BaseURL: url, APIKey: "sk-up", Timeout: 5 * time.Second})
			t.Cleanup(c.Close)
			req := &pb.CreateEmbeddingsRequest{Model: "emb", Input: tc.input}
			if tc.format != "" {
				req.EncodingFormat = &tc.format
			}
			_, err := c.Embed(context.Background(), providers.Attempt{Model: "emb"}, req)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			var pe *providers.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, 502, pe.Status)
			require.Equal(t, "upstream_unreadable", pe.Code)
		})
	}
}
