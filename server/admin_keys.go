package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"google.golang.org/grpc/codes"

	adminpb "github.com/switchyard/switchyard/gen/switchyard/admin/v1"
	"github.com/switchyard/switchyard/keys"
	"github.com/switchyard/switchyard/limits"
)

// The admin API's virtual keys: CreateKey, ListKeys, GetKey, UpdateKey, RevokeKey.
// Every change is audited (who, action, key id); a secret is never logged.

func (s *adminService) registry() (*keys.Registry, error) {
	if s.keys == nil {
		return nil, statusOf(apiError{httpStatus: http.StatusPreconditionFailed, grpcCode: codes.FailedPrecondition,
			errType: "invalid_request_error", code: "keys_disabled", message: "virtual keys are not enabled on this server"})
	}
	return s.keys, nil
}

func (s *adminService) CreateKey(ctx context.Context, req *adminpb.CreateKeyRequest) (*adminpb.CreateKeyResponse, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	spec := keys.Spec{Name: req.GetName(), Models: req.GetModels(), Limits: limitsOf(req.GetLimits()),
		BudgetUSD: req.GetBudgetUsd(), BudgetPeriod: req.GetBudgetPeriod()}
	if spec.ExpiresAt, err = timeOf("expires_at", req.GetExpiresAt()); err != nil {
		return nil, err
	}
	k, secret, err := reg.Create(ctx, spec)
	if err != nil {
		return nil, keyError(s, err)
	}
	s.audit(ctx, "create key", "key_id", k.ID, "name", k.Name, "models", len(k.Models))
	return &adminpb.CreateKeyResponse{Key: keyOf(k), Secret: secret}, nil
}

func (s *adminService) ListKeys(context.Context, *adminpb.ListKeysRequest) (*adminpb.ListKeysResponse, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	out := &adminpb.ListKeysResponse{}
	for _, k := range reg.List() {
		out.Keys = append(out.Keys, keyOf(k))
	}
	return out, nil
}

func (s *adminService) GetKey(_ context.Context, req *adminpb.GetKeyRequest) (*adminpb.GetKeyResponse, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	k, err := reg.Get(req.GetId())
	if err != nil {
		return nil, keyError(s, err)
	}
	return &adminpb.GetKeyResponse{Key: keyOf(k)}, nil
}

func (s *adminService) UpdateKey(ctx context.Context, req *adminpb.UpdateKeyRequest) (*adminpb.UpdateKeyResponse, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	var changed []string
	k, err := reg.Update(ctx, req.GetId(), func(sp *keys.Spec) error {
		changed = changed[:0] // the edit may run again on a record changed meanwhile
		if req.Name != nil {
			sp.Name, changed = req.GetName(), append(changed, "name")
		}
		if len(req.GetModels()) > 0 {
			sp.Models, changed = req.GetModels(), append(changed, "models")
		}
		if req.Limits != nil {
			sp.Limits, changed = limitsOf(req.GetLimits()), append(changed, "limits")
		}
		if req.ExpiresAt != nil {
			t, err := timeOf("expires_at", req.GetExpiresAt())
			if err != nil {
				return err
			}
			sp.ExpiresAt, changed = t, append(changed, "expires_at")
		}
		if req.BudgetUsd != nil {
			sp.BudgetUSD, changed = req.GetBudgetUsd(), append(changed, "budget_usd")
		}
		if req.BudgetPeriod != nil {
			sp.BudgetPeriod, changed = req.GetBudgetPeriod(), append(changed, "budget_period")
		}
		return nil
	})
	if err != nil {
		return nil, keyError(s, err)
	}
	s.audit(ctx, "update key", "key_id", k.ID, "changed", changed)
	return &adminpb.UpdateKeyResponse{Key: keyOf(k)}, nil
}

func (s *adminService) RevokeKey(ctx context.Context, req *adminpb.RevokeKeyRequest) (*adminpb.RevokeKeyResponse, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	k, err := reg.Revoke(ctx, req.GetId())
	if err != nil {
		return nil, keyError(s, err)
	}
	s.audit(ctx, "revoke key", "key_id", k.ID)
	return &adminpb.RevokeKeyResponse{Key: keyOf(k)}, nil
}

// keyError maps the keys package's errors to statuses.
func keyError(s *adminService, err error) error {
	var ie *keys.InvalidError
	switch {
	case errors.As(err, &ie):
		return invalidRequest(ie.Field, ie.Error())
	case errors.Is(err, keys.ErrNotFound):
		return statusOf(apiError{httpStatus: http.StatusNotFound, errType: "not_found_error", code: "not_found", message: "no key has this id"})
	case errors.Is(err, keys.ErrContended):
		return statusOf(apiError{httpStatus: http.StatusConflict, grpcCode: codes.Aborted, errType: "invalid_request_error",
			code: "concurrent_change", message: err.Error()})
	case errors.Is(err, keys.ErrRevoked):
		return statusOf(apiError{httpStatus: http.StatusConflict, grpcCode: codes.FailedPrecondition, errType: "invalid_request_error",
			code: "key_revoked", message: "this key is revoked and cannot be changed"})
	}
	return toStatus(s.log, err)
}

func limitsOf(l *adminpb.KeyLimits) limits.Limits {
	return limits.Limits{RPM: int(l.GetRpm()), TPM: int(l.GetTpm()), MaxConcurrency: int(l.GetMaxConcurrency())}
}

// timeOf reads an RFC 3339 time; "" is none.
func timeOf(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, invalidRequest(field, "expected an RFC 3339 time such as 2026-12-31T23:59:59Z")
	}
	if t.IsZero() { // Go's zero time is a time, long past: it is not "" (none)
		return time.Time{}, invalidRequest(field, "must be in the future")
	}
	return t, nil
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// keyOf shows a key: never its hash nor its secret.
func keyOf(k keys.Key) *adminpb.Key {
	return &adminpb.Key{Id: k.ID, Name: k.Name, Prefix: k.Prefix, Models: k.Models,
		Limits:    &adminpb.KeyLimits{Rpm: int32(k.Limits.RPM), Tpm: int32(k.Limits.TPM), MaxConcurrency: int32(k.Limits.MaxConcurrency)},
		ExpiresAt: timeText(k.ExpiresAt), CreatedAt: timeText(k.CreatedAt), UpdatedAt: timeText(k.UpdatedAt),
		RevokedAt: timeText(k.RevokedAt), BudgetUsd: k.BudgetUSD, BudgetPeriod: k.BudgetPeriod}
}
