package openaijson

import (
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/switchyard/switchyard/gen/switchyard/v1"
)

// encPlan is what appendObject needs to know of a message type's fields,
// worked out once per type instead of asked of the descriptors for every field
// of every message written.
type encPlan struct {
	fields []encField
	extra  protoreflect.FieldDescriptor // the extra Struct, nil when the type has none
	known  protoreflect.FieldDescriptors
}

type encField struct {
	fd                    protoreflect.FieldDescriptor
	name                  string // the member's name: a raw JSON field's without its suffix
	raw                   bool   // JSON kept as it arrived (rawName)
	list, isMap, presence bool
	always                bool // a list written even when empty
	up                    upField
}

// upField names the members of a chat request that Upstream sets.
type upField uint8

const (
	upNone upField = iota
	upModel
	upStream
	upStreamOptions
)

var encPlans sync.Map // protoreflect.MessageDescriptor → *encPlan

func planOf(md protoreflect.MessageDescriptor) *encPlan {
	if p, ok := encPlans.Load(md); ok {
		return p.(*encPlan)
	}
	p := &encPlan{extra: extraField(md), known: md.Fields()}
	request := md.FullName() == (*pb.ChatCompletionRequest)(nil).ProtoReflect().Descriptor().FullName()
	for i := 0; i < md.Fields().Len(); i++ {
		fd := md.Fields().Get(i)
		if p.extra != nil && fd == p.extra {
			continue
		}
		f := encField{fd: fd, name: string(fd.Name()), list: fd.IsList(), isMap: fd.IsMap(),
			presence: fd.HasPresence(), always: alwaysLists[fd.Name()]}
		if rawAs := rawName(fd); rawAs != "" {
			f.name, f.raw = rawAs, true
		}
		if request {
			f.up = map[protoreflect.Name]upField{"model": upModel, "stream": upStream, "stream_options": upStreamOptions}[fd.Name()]
		}
		p.fields = append(p.fields, f)
	}
	actual, _ := encPlans.LoadOrStore(md, p)
	return actual.(*encPlan)
}

// Upstream is what the gateway sets in a chat request on its way upstream.
type Upstream struct {
	Model         string
	Stream        bool
	StreamOptions *pb.StreamOptions // nil: none
}

// value is the field's value as Upstream sets it, and whether it is set.
func (u *Upstream) value(f upField) (protoreflect.Value, bool) {
	switch f {
	case upModel:
		return protoreflect.ValueOfString(u.Model), true
	case upStream:
		return protoreflect.ValueOfBool(u.Stream), true
	default:
		if u.StreamOptions == nil {
			return protoreflect.Value{}, false
		}
		return protoreflect.ValueOfMessage(u.StreamOptions.ProtoReflect()), true
	}
}
