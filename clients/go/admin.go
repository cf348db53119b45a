package switchyard

import (
	"context"

	"google.golang.org/grpc"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
)

// Admin calls switchyard.admin.v1.AdminService with the admin key.
type Admin struct {
	stub adminpb.AdminServiceClient
	call []grpc.CallOption
}

// Breakers lists every circuit breaker.
func (a *Admin) Breakers(ctx context.Context) ([]*adminpb.Breaker, error) {
	r, err := a.stub.ListBreakers(ctx, &adminpb.ListBreakersRequest{}, a.call...)
	return r.GetBreakers(), err
}

// ResetBreaker forces a breaker closed (model empty for provider scope).
func (a *Admin) ResetBreaker(ctx context.Context, provider, model string) (*adminpb.Breaker, error) {
	r, err := a.stub.ResetBreaker(ctx, &adminpb.ResetBreakerRequest{Provider: provider, Model: model}, a.call...)
	return r.GetBreaker(), err
}

// TripBreaker forces a breaker open for duration (e.g. "10m"; "" = its timeout).
func (a *Admin) TripBreaker(ctx context.Context, provider, model, duration string) (*adminpb.Breaker, error) {
	r, err := a.stub.TripBreaker(ctx, &adminpb.TripBreakerRequest{Provider: provider, Model: model, Duration: duration}, a.call...)
	return r.GetBreaker(), err
}

// VirtualModels lists every virtual model.
func (a *Admin) VirtualModels(ctx context.Context) ([]*adminpb.VirtualModel, error) {
	r, err := a.stub.ListVirtualModels(ctx, &adminpb.ListVirtualModelsRequest{}, a.call...)
	return r.GetVirtualModels(), err
}

// UpsertVirtualModel creates or replaces a virtual model.
func (a *Admin) UpsertVirtualModel(ctx context.Context, vm *adminpb.VirtualModel) (*adminpb.VirtualModel, error) {
	r, err := a.stub.UpsertVirtualModel(ctx, &adminpb.UpsertVirtualModelRequest{VirtualModel: vm}, a.call...)
	return r.GetVirtualModel(), err
}

// DeleteVirtualModel removes a virtual model created through the API.
func (a *Admin) DeleteVirtualModel(ctx context.Context, source string) error {
	_, err := a.stub.DeleteVirtualModel(ctx, &adminpb.DeleteVirtualModelRequest{Source: source}, a.call...)
	return err
}

// Providers lists the providers with their health.
func (a *Admin) Providers(ctx context.Context) ([]*adminpb.Provider, error) {
	r, err := a.stub.ListProviders(ctx, &adminpb.ListProvidersRequest{}, a.call...)
	return r.GetProviders(), err
}
