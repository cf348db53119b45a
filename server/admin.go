package server

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard/switchyard/config"
	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	"github.com/switchyard/switchyard/keys"
	"github.com/switchyard/switchyard/resilience"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/usage"
)

// ProviderInfo is what the admin API shows of a provider's configuration.
type ProviderInfo struct {
	Type, BaseURL string
	// EmbeddingModels are the models its config lists under embedding_models.
	EmbeddingModels []string
}

// adminService serves switchyard.admin.v1.AdminService.
type adminService struct {
	adminpb.UnimplementedAdminServiceServer
	log       *slog.Logger
	router    *router.Router
	failover  config.Failover
	persist   func([]config.VirtualModel) error
	breakers  BreakerSync
	providers map[string]ProviderInfo
	keys      *keys.Registry // nil: the key RPCs answer FailedPrecondition
	ledger    *usage.Ledger  // nil: the usage RPCs answer FailedPrecondition (server/admin_usage.go)
}

func (s *adminService) audit(ctx context.Context, action string, attrs ...any) {
	s.log.Info("admin change", append([]any{"who", callerOf(ctx), "action", action, "request_id", requestID(ctx)}, attrs...)...)
}

func breakerOf(e resilience.Entry) *adminpb.Breaker {
	b := &adminpb.Breaker{
		Provider: e.Provider, Model: e.Model, ConsecutiveFailures: int32(e.ConsecutiveFailures),
		Scope: string(e.Settings.Scope), Enabled: e.Settings.Active(),
		FailureThreshold: int32(e.Settings.FailureThreshold), SuccessThreshold: int32(e.Settings.SuccessThreshold),
		Timeout: e.Settings.Timeout.String(), SlowCallThreshold: e.Settings.SlowCallThreshold.String(),
	}
	switch e.State {
	case resilience.Open:
		b.State = adminpb.BreakerState_BREAKER_STATE_OPEN
	case resilience.HalfOpen:
		b.State = adminpb.BreakerState_BREAKER_STATE_HALF_OPEN
	default:
		b.State = adminpb.BreakerState_BREAKER_STATE_CLOSED
	}
	if !e.OpenedAt.IsZero() {
		b.OpenedAt = e.OpenedAt.UTC().Format(time.RFC3339Nano)
	}
	if !e.NextProbe.IsZero() {
		b.NextProbeAt = e.NextProbe.UTC().Format(time.RFC3339Nano)
	}
	return b
}

func (s *adminService) ListBreakers(context.Context, *adminpb.ListBreakersRequest) (*adminpb.ListBreakersResponse, error) {
	out := &adminpb.ListBreakersResponse{}
	for _, e := range s.router.Breakers() {
		out.Breakers = append(out.Breakers, breakerOf(e))
	}
	return out, nil
}

func (s *adminService) ResetBreaker(ctx context.Context, req *adminpb.ResetBreakerRequest) (*adminpb.ResetBreakerResponse, error) {
	if s.breakers != nil {
		if err := s.breakers.Reset(ctx, req.GetProvider(), req.GetModel()); err != nil {
			return nil, toStatus(s.log, err)
		}
	}
	e, err := s.router.ResetBreaker(req.GetProvider(), req.GetModel())
	if err != nil {
		return nil, toStatus(s.log, err)
	}
	s.audit(ctx, "reset breaker", "provider", req.GetProvider(), "model", req.GetModel())
	return &adminpb.ResetBreakerResponse{Breaker: breakerOf(e)}, nil
}

func (s *adminService) TripBreaker(ctx context.Context, req *adminpb.TripBreakerRequest) (*adminpb.TripBreakerResponse, error) {
	var d time.Duration
	if req.GetDuration() != "" {
		var err error
		if d, err = time.ParseDuration(req.GetDuration()); err != nil || d < 0 {
			return nil, invalidRequest("duration", fmt.Sprintf("%q is not a duration (e.g. 90s, 10m)", req.GetDuration()))
		}
	}
	if err := s.router.CheckTrip(req.GetProvider(), req.GetModel()); err != nil {
		return nil, toStatus(s.log, err) // before the trip is shared with the other replicas
	}
	if s.breakers != nil {
		if err := s.breakers.Trip(ctx, req.GetProvider(), req.GetModel(), d); err != nil {
			return nil, toStatus(s.log, err)
		}
	}
	e, err := s.router.TripBreaker(req.GetProvider(), req.GetModel(), d)
	if err != nil {
		return nil, toStatus(s.log, err)
	}
	s.audit(ctx, "trip breaker", "provider", req.GetProvider(), "model", req.GetModel(), "duration", d.String())
	return &adminpb.TripBreakerResponse{Breaker: breakerOf(e)}, nil
}

func (s *adminService) ListVirtualModels(context.Context, *adminpb.ListVirtualModelsRequest) (*adminpb.ListVirtualModelsResponse, error) {
	out := &adminpb.ListVirtualModelsResponse{}
	for _, vm := range s.router.VirtualModels() {
		out.VirtualModels = append(out.VirtualModels, virtualModelOf(vm))
	}
	return out, nil
}

func (s *adminService) GetVirtualModel(_ context.Context, req *adminpb.GetVirtualModelRequest) (*adminpb.GetVirtualModelResponse, error) {
	vm, err := s.router.VirtualModel(req.GetSource())
	if err != nil {
		return nil, toStatus(s.log, err)
	}
	return &adminpb.GetVirtualModelResponse{VirtualModel: virtualModelOf(vm)}, nil
}

func (s *adminService) store(vms []router.VirtualModel) error {
	if s.persist == nil {
		return nil
	}
	specs := make([]config.VirtualModel, 0, len(vms))
	for _, vm := range vms {
		specs = append(specs, vm.Spec)
	}
	return s.persist(specs)
}

func (s *adminService) UpsertVirtualModel(ctx context.Context, req *adminpb.UpsertVirtualModelRequest) (*adminpb.UpsertVirtualModelResponse, error) {
	spec, err := specOf(req.GetVirtualModel())
	if err != nil {
		return nil, err
	}
	vm := router.FromConfig(s.failover, spec, false)
	if err := s.router.UpsertVirtualModel(vm, s.store); err != nil {
		return nil, toStatus(s.log, err)
	}
	s.audit(ctx, "upsert virtual model", "source", spec.Source, "targets", len(spec.Targets))
	stored, err := s.router.VirtualModel(spec.Source)
	if err != nil {
		return nil, toStatus(s.log, err)
	}
	return &adminpb.UpsertVirtualModelResponse{VirtualModel: virtualModelOf(stored)}, nil
}

func (s *adminService) DeleteVirtualModel(ctx context.Context, req *adminpb.DeleteVirtualModelRequest) (*adminpb.DeleteVirtualModelResponse, error) {
	if err := s.router.DeleteVirtualModel(req.GetSource(), s.store); err != nil {
		return nil, toStatus(s.log, err)
	}
	s.audit(ctx, "delete virtual model", "source", req.GetSource())
	return &adminpb.DeleteVirtualModelResponse{}, nil
}

func (s *adminService) ListProviders(context.Context, *adminpb.ListProvidersRequest) (*adminpb.ListProvidersResponse, error) {
	out := &adminpb.ListProvidersResponse{}
	for _, rep := range s.router.Report() {
		info := s.providers[rep.Name]
		p := &adminpb.Provider{Name: rep.Name, Type: info.Type, BaseUrl: info.BaseURL,
			DiscoveredModels: int32(rep.Discovered), ConfiguredModels: int32(rep.Configured),
			LastDiscoveryError: rep.LastError, Status: rep.Status, StatusReason: rep.Reason,
			RecentRequests: int32(rep.RecentRequests), RecentFailures: int32(rep.RecentFailures)}
		if !rep.LastCheck.IsZero() {
			p.LastDiscovery = rep.LastCheck.UTC().Format(time.RFC3339Nano)
		}
		out.Providers = append(out.Providers, p)
	}
	return out, nil
}

// virtualModelOf shows a virtual model in the config file's shape.
func virtualModelOf(vm router.VirtualModel) *adminpb.VirtualModel {
	spec := vm.Spec
	out := &adminpb.VirtualModel{Source: spec.Source, Strategy: string(vm.Strategy), ConfigManaged: vm.ConfigManaged}
	if out.Strategy == "" {
		out.Strategy = string(router.StrategyFailover)
	}
	for _, t := range spec.Targets {
		w := int32(1)
		if t.Weight != nil {
			w = int32(*t.Weight)
		}
		out.Targets = append(out.Targets, &adminpb.VirtualModelTarget{Model: t.Model, Weight: &w})
	}
	if f := spec.Failover; f != nil {
		if f.RetryOnStatuses == nil && f.RetryOnErrors == nil && f.MaxAttempts == nil && f.Enabled != nil {
			out.Failover = structpb.NewBoolValue(*f.Enabled)
		} else {
			fields := map[string]any{}
			if f.Enabled != nil {
				fields["enabled"] = *f.Enabled
			}
			if f.RetryOnStatuses != nil {
				l := []any{}
				for _, st := range *f.RetryOnStatuses {
					if n, err := strconv.Atoi(st); err == nil {
						l = append(l, n) // 503 as a number, as in the YAML; classes like "5xx" stay strings
					} else {
						l = append(l, st)
					}
				}
				fields["retry_on_statuses"] = l
			}
			if f.RetryOnErrors != nil {
				l := []any{}
				for _, e := range f.RetryOnErrors {
					l = append(l, e)
				}
				fields["retry_on_errors"] = l
			}
			if f.MaxAttempts != nil {
				fields["max_attempts"] = *f.MaxAttempts
			}
			if st, err := structpb.NewStruct(fields); err == nil {
				out.Failover = structpb.NewStructValue(st)
			}
		}
	}
	out.StreamResume = streamResumeValue(spec.StreamResume)
	out.HedgeAfter = hedgeAfterText(spec.HedgeAfter)
	return out
}

// specOf reads a virtual model sent to the API into the config file's shape.
func specOf(in *adminpb.VirtualModel) (config.VirtualModel, error) {
	if in == nil {
		return config.VirtualModel{}, invalidRequest("virtual_model", "virtual_model is required")
	}
	spec := config.VirtualModel{Source: strings.TrimSpace(in.GetSource()), Strategy: in.GetStrategy()}
	if spec.Source == "" {
		return spec, invalidRequest("virtual_model.source", "source is required")
	}
	if len(spec.Source) > router.MaxSourceBytes {
		return spec, invalidRequest("virtual_model.source", fmt.Sprintf("source: at most %d bytes", router.MaxSourceBytes))
	}
	if len(in.GetTargets()) > router.MaxTargets {
		return spec, invalidRequest("virtual_model.targets", fmt.Sprintf("at most %d targets", router.MaxTargets))
	}
	for _, t := range in.GetTargets() {
		tgt := config.Target{Model: t.GetModel()}
		if t.Weight != nil { // 0 given is 0 (a backup), as in the config file
			w := int(t.GetWeight())
			tgt.Weight = &w
		}
		spec.Targets = append(spec.Targets, tgt)
	}
	f, err := failoverOf(in.GetFailover())
	if err != nil {
		return spec, err
	}
	spec.Failover = f
	if spec.StreamResume, err = streamResumeOf(in.GetStreamResume()); err != nil {
		return spec, err
	}
	if spec.HedgeAfter, err = hedgeAfterOf(in.GetHedgeAfter()); err != nil {
		return spec, err
	}
	return spec, nil // targets and strategy are checked by the router, against the live providers
}

func failoverOf(v *structpb.Value) (*config.Failover, error) {
	switch k := v.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
		return nil, nil
	case *structpb.Value_BoolValue:
		b := k.BoolValue
		return &config.Failover{Enabled: &b}, nil
	case *structpb.Value_StructValue:
		f := &config.Failover{}
		for key, val := range k.StructValue.GetFields() {
			switch key {
			case "enabled":
				b, ok := val.GetKind().(*structpb.Value_BoolValue)
				if !ok {
					return nil, invalidRequest("virtual_model.failover.enabled", "expected a boolean")
				}
				f.Enabled = &b.BoolValue
			case "retry_on_statuses":
				items, err := listOf("virtual_model.failover.retry_on_statuses", val)
				if err != nil {
					return nil, err
				}
				l := config.StatusList{}
				for i, item := range items {
					switch x := item.GetKind().(type) {
					case *structpb.Value_NumberValue:
						if x.NumberValue != math.Trunc(x.NumberValue) {
							return nil, invalidRequest(fmt.Sprintf("virtual_model.failover.retry_on_statuses[%d]", i), "a status is a whole number")
						}
						l = append(l, strconv.FormatFloat(x.NumberValue, 'f', -1, 64))
					case *structpb.Value_StringValue:
						l = append(l, x.StringValue)
					default:
						return nil, invalidRequest(fmt.Sprintf("virtual_model.failover.retry_on_statuses[%d]", i), `expected a status (429) or a class ("5xx")`)
					}
				}
				if _, err := resilience.ParseStatusSet(l); err != nil {
					return nil, invalidRequest("virtual_model.failover.retry_on_statuses", err.Error())
				}
				f.RetryOnStatuses = &l
			case "retry_on_errors":
				items, err := listOf("virtual_model.failover.retry_on_errors", val)
				if err != nil {
					return nil, err
				}
				for i, item := range items {
					x, ok := item.GetKind().(*structpb.Value_StringValue)
					if !ok {
						return nil, invalidRequest(fmt.Sprintf("virtual_model.failover.retry_on_errors[%d]", i), "expected a string")
					}
					f.RetryOnErrors = append(f.RetryOnErrors, x.StringValue)
				}
			case "max_attempts":
				x, ok := val.GetKind().(*structpb.Value_NumberValue)
				switch {
				case !ok:
					return nil, invalidRequest("virtual_model.failover.max_attempts", "expected a number")
				case x.NumberValue != math.Trunc(x.NumberValue) || x.NumberValue > math.MaxInt32:
					return nil, invalidRequest("virtual_model.failover.max_attempts", "expected a whole number")
				case x.NumberValue < 0:
					return nil, invalidRequest("virtual_model.failover.max_attempts", "must not be negative")
				}
				n := int(x.NumberValue)
				f.MaxAttempts = &n
			default:
				return nil, invalidRequest("virtual_model.failover."+key, "unknown field (want enabled, retry_on_statuses, retry_on_errors, max_attempts)")
			}
		}
		return f, nil
	}
	return nil, invalidRequest("virtual_model.failover", "expected true, false or a block")
}

// listOf is a failover member that must be a list.
func listOf(param string, v *structpb.Value) ([]*structpb.Value, error) {
	l, ok := v.GetKind().(*structpb.Value_ListValue)
	if !ok {
		return nil, invalidRequest(param, "expected a list")
	}
	return l.ListValue.GetValues(), nil
}
