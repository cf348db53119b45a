package openaijson_test

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
	"github.com/switchyard/switchyard/openaijson"
)

// FuzzDecode: any input gives an error or a message; a decoded message encodes to
// valid JSON that decodes to the same message; invalid JSON is never accepted.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		benchRequest, `{}`, `{"choices":[{"index":0,"delta":{"content":"a\u00e9\ud83d\ude00"}}],"x":[1,{"y":null}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stop":["a"],"logit_bias":{"1":-5}}`,
		`{"error":{"message":"x","code":429}}`, `{"a":1e400}`, `{"seed":-9007199254740993}`, `{"n":1.0}`, `[`, `{"a":"\`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := openaijson.InspectChunk(data); err == nil && !json.Valid(data) {
			t.Fatalf("InspectChunk accepted invalid JSON %q", data)
		}
		var fast, generic pb.ChatCompletionChunk
		errFast, errGeneric := openaijson.UnmarshalChunk(data, &fast), openaijson.Unmarshal(data, &generic)
		if (errFast == nil) != (errGeneric == nil) || (errFast != nil && errFast.Error() != errGeneric.Error()) {
			t.Fatalf("UnmarshalChunk error %v, Unmarshal error %v, for %q", errFast, errGeneric, data)
		}
		if errFast == nil && !proto.Equal(&fast, &generic) {
			t.Fatalf("UnmarshalChunk and Unmarshal differ for %q", data)
		}
		var fastC, genericC pb.ChatCompletion
		errFast, errGeneric = openaijson.UnmarshalCompletion(data, &fastC), openaijson.Unmarshal(data, &genericC)
		if (errFast == nil) != (errGeneric == nil) || (errFast != nil && errFast.Error() != errGeneric.Error()) {
			t.Fatalf("UnmarshalCompletion error %v, Unmarshal error %v, for %q", errFast, errGeneric, data)
		}
		if errFast == nil && !proto.Equal(&fastC, &genericC) {
			t.Fatalf("UnmarshalCompletion and Unmarshal differ for %q", data)
		}
		for _, msg := range []proto.Message{&pb.ChatCompletionRequest{}, &pb.ChatCompletion{}, &pb.ChatCompletionChunk{}} {
			if err := openaijson.Unmarshal(data, msg); err != nil {
				continue
			}
			if !json.Valid(data) {
				t.Fatalf("accepted invalid JSON %q", data)
			}
			out := openaijson.Marshal(msg)
			if !json.Valid(out) {
				t.Fatalf("encoded invalid JSON %q from %q", out, data)
			}
			again := proto.Clone(msg)
			if err := openaijson.Unmarshal(out, again); err != nil {
				t.Fatalf("re-decoding %q: %v", out, err)
			}
			if !proto.Equal(msg, again) {
				t.Fatalf("round trip changed the message:\n%q\n%q", data, out)
			}
		}
	})
}
