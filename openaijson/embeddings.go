package openaijson

import (
	"math"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// Embeddings' JSON differs from the generic mapping in two members, so it has its
// own decoders and encoders: "input" is a string, an array of strings, an array
// of tokens or an array of token arrays (EmbeddingInput's oneof, read without a
// google.protobuf.Value per token, so a large token input is not held to the
// values budget), and each "embedding" is an array of numbers or, with
// encoding_format "base64", a string (Embedding.embedding_base64, kept as it came).

// UnmarshalEmbeddingsRequest decodes an embeddings request body into req. Every
// other member decodes as Unmarshal does (unknown members in extra, within the
// values budget). Errors are *Error.
func UnmarshalEmbeddingsRequest(data []byte, req *pb.CreateEmbeddingsRequest) error {
	proto.Reset(req)
	d := &decoder{s: scanner{data: data}}
	if d.s.peek() != '{' {
		return failure(data, nil)
	}
	err := d.embeddingsRequest(req)
	if err == nil && d.s.atEnd() {
		return nil
	}
	proto.Reset(req)
	return failure(data, err)
}

func (d *decoder) embeddingsRequest(req *pb.CreateEmbeddingsRequest) error {
	m := req.ProtoReflect()
	ix := d.s.index(m.Descriptor())
	extraFd := ix.extra
	var extra *structpb.Struct
	err := d.s.object(func(key []byte) error {
		if string(key) == "input" {
			d.push("input")
			in, err := d.embeddingInput()
			if err != nil {
				return err
			}
			d.pop()
			req.Input = in
			return nil
		}
		fd := ix.get(key)
		if fd == nil {
			v, err := d.s.value()
			if err != nil {
				d.push(string(key))
				return d.valueError(err)
			}
			if extra == nil {
				extra = &structpb.Struct{Fields: make(map[string]*structpb.Value, 4)}
			}
			extra.Fields[string(key)] = v
			return nil
		}
		d.push(string(fd.Name()))
		err := d.field(m, fd)
		if err == nil {
			d.pop()
		}
		return err
	})
	if err == nil && extra != nil {
		m.Set(extraFd, protoreflect.ValueOfMessage(extra.ProtoReflect()))
	}
	return err
}

const inputShapes = "expected a string, an array of strings, an array of integers or an array of arrays of integers"

// embeddingInput reads "input" in any of its shapes; null is no input.
func (d *decoder) embeddingInput() (*pb.EmbeddingInput, error) {
	switch d.s.peek() {
	case 'n':
		if d.null() {
			return nil, nil
		}
	case '"':
		s, err := d.s.str()
		if err != nil {
			return nil, err
		}
		return &pb.EmbeddingInput{Kind: &pb.EmbeddingInput_Text{Text: s}}, nil
	case '[':
		return d.inputArray()
	}
	return nil, d.fail(inputShapes)
}

// inputArray reads an array input; its first element sets its shape.
func (d *decoder) inputArray() (*pb.EmbeddingInput, error) {
	var texts []string
	var tokens []int64
	var lists []*pb.TokenList
	shape := byte(0)
	err := d.s.array(func(i int) error {
		c := d.s.peek()
		if i == 0 {
			shape = c
		}
		d.pushIndex(i)
		switch {
		case shape == '"' && c == '"':
			s, err := d.s.str()
			if err != nil {
				return err
			}
			texts = append(texts, s)
		case shape == '[' && c == '[':
			var l []int64
			if err := d.s.array(func(j int) error {
				d.pushIndex(j)
				n, err := d.token()
				if err != nil {
					return err
				}
				d.pop()
				l = append(l, n)
				return nil
			}); err != nil {
				return err
			}
			lists = append(lists, &pb.TokenList{Values: l})
		case shape != '"' && shape != '[' && c != '"' && c != '[':
			n, err := d.token()
			if err != nil {
				return err
			}
			tokens = append(tokens, n)
		default:
			return d.fail("every element must have the first one's type (" + inputShapes + ")")
		}
		d.pop()
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch shape {
	case '[':
		return &pb.EmbeddingInput{Kind: &pb.EmbeddingInput_TokenLists{TokenLists: &pb.TokenLists{Values: lists}}}, nil
	case '"', 0: // [] is an empty list of texts
		return &pb.EmbeddingInput{Kind: &pb.EmbeddingInput_Texts{Texts: &pb.StringList{Values: texts}}}, nil
	}
	return &pb.EmbeddingInput{Kind: &pb.EmbeddingInput_Tokens{Tokens: &pb.TokenList{Values: tokens}}}, nil
}

// token reads one token id (an integer).
func (d *decoder) token() (int64, error) {
	c := d.s.peek()
	if c != '-' && (c < '0' || c > '9') {
		if d.s.skip() != nil {
			return 0, errSyntax
		}
		return 0, d.fail("expected an integer")
	}
	num, err := d.s.number()
	if err != nil {
		return 0, err
	}
	v, msg := integer(num, protoreflect.Int64Kind)
	if msg != "" {
		return 0, d.fail(msg)
	}
	return v.Int(), nil
}

// AppendEmbeddingsRequest appends req as an upstream's request body, with model
// as its "model" (req is not modified): "input" in the shape it came in, then the
// other members as Marshal writes them, unknown ones included.
func AppendEmbeddingsRequest(b []byte, req *pb.CreateEmbeddingsRequest, model string) []byte {
	b = append(b, `{"input":`...)
	b = appendEmbeddingInput(b, req.GetInput())
	rest := &pb.CreateEmbeddingsRequest{Model: model, EncodingFormat: req.EncodingFormat, Dimensions: req.Dimensions,
		User: req.User, Extra: req.Extra}
	start := len(b)
	b = appendMessage(b, rest.ProtoReflect()) // {"model":...}: never empty
	b[start] = ','
	return b
}

func appendEmbeddingInput(b []byte, in *pb.EmbeddingInput) []byte {
	switch k := in.GetKind().(type) {
	case *pb.EmbeddingInput_Text:
		return appendString(b, k.Text)
	case *pb.EmbeddingInput_Texts:
		b = append(b, '[')
		for i, s := range k.Texts.GetValues() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		return append(b, ']')
	case *pb.EmbeddingInput_Tokens:
		return appendTokens(b, k.Tokens.GetValues())
	case *pb.EmbeddingInput_TokenLists:
		b = append(b, '[')
		for i, l := range k.TokenLists.GetValues() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendTokens(b, l.GetValues())
		}
		return append(b, ']')
	}
	return append(b, "null"...)
}

func appendTokens(b []byte, ts []int64) []byte {
	b = append(b, '[')
	for i, t := range ts {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, t, 10)
	}
	return append(b, ']')
}

// AppendEmbeddingsResponse appends resp in OpenAI's shape: each embedding an
// array of numbers (float32 precision, shortest form), or embedding_base64's
// string as it is.
func AppendEmbeddingsResponse(b []byte, resp *pb.CreateEmbeddingsResponse) []byte {
	b = append(b, `{"object":`...)
	b = appendString(b, orList(resp.GetObject()))
	b = append(b, `,"data":[`...)
	for i, e := range resp.GetData() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":`...)
		obj := e.GetObject()
		if obj == "" {
			obj = "embedding"
		}
		b = appendString(b, obj)
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(e.GetIndex()), 10)
		b = append(b, `,"embedding":`...)
		if e.GetEmbeddingBase64() != "" {
			b = appendString(b, e.GetEmbeddingBase64())
		} else {
			b = append(b, '[')
			for j, f := range e.GetEmbedding() {
				if j > 0 {
					b = append(b, ',')
				}
				if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
					f = 0 // not JSON; no decoder here makes one
				}
				b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = appendString(b, resp.GetModel())
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(resp.GetUsage().GetPromptTokens()), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(resp.GetUsage().GetTotalTokens()), 10)
	return append(b, "}}"...)
}

func orList(s string) string {
	if s == "" {
		return "list"
	}
	return s
}

// UnmarshalEmbeddingsResponse decodes an upstream's embeddings response into
// resp. Members it does not model are skipped. Errors are *Error.
func UnmarshalEmbeddingsResponse(data []byte, resp *pb.CreateEmbeddingsResponse) error {
	proto.Reset(resp)
	d := &decoder{s: scanner{data: data}}
	if d.s.peek() != '{' {
		return failure(data, nil)
	}
	err := d.embeddingsResponse(resp)
	if err == nil && d.s.atEnd() {
		return nil
	}
	proto.Reset(resp)
	return failure(data, err)
}

func (d *decoder) embeddingsResponse(resp *pb.CreateEmbeddingsResponse) error {
	return d.s.object(func(key []byte) error {
		d.push(string(key))
		var err error
		switch string(key) {
		case "object":
			resp.Object, err = d.optString()
		case "model":
			resp.Model, err = d.optString()
		case "usage": // a member twice: the last one counts, as in encoding/json
			resp.Usage = nil
			if d.null() {
				break
			}
			resp.Usage = &pb.EmbeddingsUsage{}
			err = d.s.object(func(k []byte) error {
				d.push(string(k))
				var err error
				switch string(k) {
				case "prompt_tokens":
					resp.Usage.PromptTokens, err = d.count()
				case "total_tokens":
					resp.Usage.TotalTokens, err = d.count()
				default:
					err = d.s.skip()
				}
				if err == nil {
					d.pop()
				}
				return err
			})
		case "data":
			resp.Data = nil
			if d.null() {
				break
			}
			err = d.s.array(func(i int) error {
				d.pushIndex(i)
				e := &pb.Embedding{}
				if err := d.embedding(e); err != nil {
					return err
				}
				d.pop()
				resp.Data = append(resp.Data, e)
				return nil
			})
		default:
			err = d.s.skip()
		}
		if err == nil {
			d.pop()
		}
		return err
	})
}

func (d *decoder) embedding(e *pb.Embedding) error {
	if d.s.peek() != '{' {
		return d.fail("expected an object")
	}
	return d.s.object(func(key []byte) error {
		d.push(string(key))
		var err error
		switch string(key) {
		case "object":
			e.Object, err = d.optString()
		case "index":
			e.Index, err = d.count()
		case "embedding":
			e.EmbeddingBase64, e.Embedding = "", nil
			switch d.s.peek() {
			case '"':
				e.EmbeddingBase64, err = d.s.str()
			case '[':
				err = d.s.array(func(int) error {
					num, err := d.s.number()
					if err != nil {
						return err
					}
					f, perr := strconv.ParseFloat(string(num), 32)
					if perr != nil {
						return d.fail("number out of range")
					}
					e.Embedding = append(e.Embedding, float32(f))
					return nil
				})
			default:
				err = d.fail("expected an array of numbers or a base64 string")
			}
		default:
			err = d.s.skip()
		}
		if err == nil {
			d.pop()
		}
		return err
	})
}

// optString reads a string or null ("").
func (d *decoder) optString() (string, error) {
	if d.null() {
		return "", nil
	}
	if d.s.peek() != '"' {
		return "", d.fail("expected a string")
	}
	return d.s.str()
}

// count reads a non-negative int32 or null (0).
func (d *decoder) count() (int32, error) {
	if d.null() {
		return 0, nil
	}
	num, err := d.s.number()
	if err != nil {
		return 0, err
	}
	v, msg := integer(num, protoreflect.Int32Kind)
	if msg != "" {
		return 0, d.fail(msg)
	}
	return int32(v.Int()), nil
}
