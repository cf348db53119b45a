package fakeupstream

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Embeddings is a fake OpenAI-compatible embeddings upstream: POST
// /v1/embeddings answers one vector per input (EmbeddingVector), as floats or,
// with encoding_format "base64", as OpenAI's base64; GET /v1/models lists its
// models. Scripted replies (Status and Body, Header, Delay before answering)
// answer first.
type Embeddings struct {
	// URL is the base URL to configure (ends in /v1).
	URL string

	srv      *httptest.Server
	models   []string
	mu       sync.Mutex
	script   []Reply
	requests []Request
}

// NewEmbeddings starts an embeddings upstream serving models (default
// text-embedding-3-small).
func NewEmbeddings(models ...string) *Embeddings {
	if len(models) == 0 {
		models = []string{"text-embedding-3-small"}
	}
	e := &Embeddings{models: models}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	e.URL = e.srv.URL + "/v1"
	return e
}

// Close stops the server.
func (e *Embeddings) Close() {
	e.srv.CloseClientConnections()
	e.srv.Close()
}

// Script queues replies for the next embeddings requests.
func (e *Embeddings) Script(replies ...Reply) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.script = append(e.script, replies...)
}

// Requests returns the embeddings requests received so far.
func (e *Embeddings) Requests() []Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Request(nil), e.requests...)
}

// EmbeddingVector is the fake's vector for input i: [i+0.5, -0.25, 0.125].
func EmbeddingVector(i int) []float32 { return []float32{float32(i) + 0.5, -0.25, 0.125} }

// EmbeddingBase64 is EmbeddingVector(i) as OpenAI's base64 (little-endian float32s).
func EmbeddingBase64(i int) string {
	v := EmbeddingVector(i)
	b := make([]byte, 4*len(v))
	for j, f := range v {
		binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func (e *Embeddings) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		var b bytes.Buffer
		b.WriteString(`{"object":"list","data":[`)
		for i, m := range e.models {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":%q,"object":"model","created":1686588896,"owned_by":"system"}`, m)
		}
		b.WriteString(`]}`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b.Bytes())
	case r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings":
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.requests = append(e.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		var rep *Reply
		if len(e.script) > 0 {
			rep = &e.script[0]
			e.script = e.script[1:]
		}
		e.mu.Unlock()
		if rep != nil && rep.Delay > 0 {
			select {
			case <-time.After(rep.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if rep != nil && (rep.Status != 0 || rep.Body != "") {
			for k, v := range rep.Header {
				w.Header().Set(k, v)
			}
			status := rep.Status
			if status == 0 {
				status = http.StatusOK
			}
			if rep.Body == "" {
				writeError(w, status, "scripted failure", errorType(status), "")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, rep.Body)
			return
		}
		e.answer(w, body)
	default:
		writeError(w, http.StatusNotFound, "Unknown request URL: "+r.Method+" "+r.URL.Path, "invalid_request_error", "unknown_url")
	}
}

// answer writes one embedding per input of body.
func (e *Embeddings) answer(w http.ResponseWriter, body []byte) {
	var req struct {
		Input          json.RawMessage `json:"input"`
		Model          string          `json:"model"`
		EncodingFormat string          `json:"encoding_format"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "unreadable body", "invalid_request_error", "")
		return
	}
	n := 1
	var list []json.RawMessage
	if json.Unmarshal(req.Input, &list) == nil {
		n = len(list)
		var tokens []int64
		if json.Unmarshal(req.Input, &tokens) == nil {
			n = 1 // one token array
		}
	}
	var b bytes.Buffer
	b.WriteString(`{"object":"list","data":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"object":"embedding","index":%d,"embedding":`, i)
		if req.EncodingFormat == "base64" {
			fmt.Fprintf(&b, "%q", EmbeddingBase64(i))
		} else {
			b.WriteByte('[')
			for j, f := range EmbeddingVector(i) {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.FormatFloat(float64(f), 'g', -1, 32))
			}
			b.WriteByte(']')
		}
		b.WriteByte('}')
	}
	fmt.Fprintf(&b, `],"model":%q,"usage":{"prompt_tokens":%d,"total_tokens":%d}}`, req.Model, 4*n, 4*n)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b.Bytes())
}
