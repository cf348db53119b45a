package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/keys"
	"github.com/switchyard/switchyard/limits"
	"github.com/switchyard/switchyard/router"
)

// state is where limit counters and virtual keys live. The embedded default:
// limits in this process's memory (per replica), keys in server.data_dir. A
// shared state (Redis) replaces both backends.
type state struct {
	limits limits.Backend
	keys   keys.Store
}

// embeddedState is the one-replica state.
func embeddedState(cfg *config.Config) (state, error) {
	ks, err := keys.OpenFile(cfg.Server.DataDir)
	if err != nil {
		return state{}, err
	}
	return state{limits: limits.NewMemory(), keys: ks}, nil
}

// openKeys loads the virtual keys from st.
func openKeys(ctx context.Context, st state, log *slog.Logger) (*keys.Registry, error) {
	reg, err := keys.NewRegistry(ctx, st.keys, nil, func(err error) {
		log.Warn("could not reload the virtual keys; the last known ones stay in force", "error", err.Error())
	})
	if err != nil {
		return nil, fmt.Errorf("virtual key store: %w", err)
	}
	if n := len(reg.List()); n > 0 {
		log.Info("virtual keys loaded", "count", n)
	}
	return reg, nil
}

// targetLimiter is provider name's own limits (providers.X.limits), nil if none.
func targetLimiter(lim *limits.Limiter, name string, p *config.Provider) router.TargetLimiter {
	models := map[string]limits.Limits{}
	for m, l := range p.Limits.Models {
		models[m] = limitsOf(l)
	}
	if t := limits.NewTarget(lim, name, limitsOf(p.Limits.Account()), models); t != nil {
		return t
	}
	return nil // a typed nil would not be nil to the router
}

func limitsOf(l config.RateLimits) limits.Limits {
	return limits.Limits{RPM: l.RPM, TPM: l.TPM, MaxConcurrency: l.MaxConcurrency}
}
