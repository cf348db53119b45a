package server

import (
	"math"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard/switchyard/config"
)

// streamResumeValue shows a virtual model's stream_resume as written: a boolean,
// or a block {enabled, max_resumes}; nil when unset.
func streamResumeValue(r *config.StreamResume) *structpb.Value {
	switch {
	case r == nil:
		return nil
	case r.MaxResumes == nil && r.Enabled != nil:
		return structpb.NewBoolValue(*r.Enabled)
	}
	fields := map[string]*structpb.Value{}
	if r.Enabled != nil {
		fields["enabled"] = structpb.NewBoolValue(*r.Enabled)
	}
	if r.MaxResumes != nil {
		fields["max_resumes"] = structpb.NewNumberValue(float64(*r.MaxResumes))
	}
	return structpb.NewStructValue(&structpb.Struct{Fields: fields})
}

// streamResumeOf reads stream_resume sent to the admin API.
func streamResumeOf(v *structpb.Value) (*config.StreamResume, error) {
	switch k := v.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
		return nil, nil
	case *structpb.Value_BoolValue:
		b := k.BoolValue
		return &config.StreamResume{Enabled: &b}, nil
	case *structpb.Value_StructValue:
		r := &config.StreamResume{}
		for key, val := range k.StructValue.GetFields() {
			switch key {
			case "enabled":
				b, ok := val.GetKind().(*structpb.Value_BoolValue)
				if !ok {
					return nil, invalidRequest("virtual_model.stream_resume.enabled", "expected a boolean")
				}
				r.Enabled = &b.BoolValue
			case "max_resumes":
				f, ok := val.GetKind().(*structpb.Value_NumberValue)
				if !ok || f.NumberValue != math.Trunc(f.NumberValue) || f.NumberValue < 1 || f.NumberValue > math.MaxInt32 {
					return nil, invalidRequest("virtual_model.stream_resume.max_resumes", "expected a whole number of at least 1")
				}
				n := int(f.NumberValue)
				r.MaxResumes = &n
			default:
				return nil, invalidRequest("virtual_model.stream_resume."+key, "unknown field (want enabled, max_resumes)")
			}
		}
		return r, nil
	}
	return nil, invalidRequest("virtual_model.stream_resume", "expected true, false or a block")
}
