package redisstate

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/router"
)

// VirtualModels keeps the API-made virtual models in Redis (one hash: source ->
// the config file's YAML of it) and applies the stored set to this replica's
// router. Config-file virtual models stay each replica's own.
type VirtualModels struct {
	c        *Client
	rt       *router.Router
	failover config.Failover
	log      *slog.Logger
}

// NewVirtualModels follows the stored virtual models for rt; failover is the
// config's global block they inherit.
func NewVirtualModels(c *Client, rt *router.Router, failover config.Failover) *VirtualModels {
	v := &VirtualModels{c: c, rt: rt, failover: failover, log: c.log}
	c.OnChange(TopicVirtualModels, v.Apply)
	return v
}

func (v *VirtualModels) hash() string { return v.c.key("virtual_models") }

// Persist is server.Config.PersistVirtualModels: it stores the API-managed set
// next, writing only the entries that differ from this replica's current set (so
// that replicas changing different virtual models at once do not overwrite each
// other), and tells every replica. The router makes the change live here only if
// it succeeds.
func (v *VirtualModels) Persist(next []config.VirtualModel) error {
	prev := map[string]string{}
	for _, vm := range v.rt.VirtualModels() {
		if !vm.ConfigManaged {
			prev[vm.Source] = encodeSpec(vm.Spec)
		}
	}
	set := map[string]any{}
	for _, spec := range next {
		if enc := encodeSpec(spec); prev[spec.Source] != enc {
			set[spec.Source] = enc
		}
		delete(prev, spec.Source)
	}
	err := v.c.call(context.Background(), "save", func(ctx context.Context) error {
		_, err := v.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if len(set) > 0 {
				p.HSet(ctx, v.hash(), set)
			}
			for source := range prev {
				p.HDel(ctx, v.hash(), source)
			}
			v.c.publish(ctx, p, TopicVirtualModels)
			return nil
		})
		return err
	})
	if err != nil {
		return &UnavailableError{What: "virtual model", Err: err}
	}
	return nil
}

// Apply makes the stored set this replica's API-managed virtual models: adds and
// replaces what differs, removes what is gone. One that a config file here
// defines, or that does not validate against this replica's providers, is skipped
// with a warning.
func (v *VirtualModels) Apply(ctx context.Context) error {
	// The read of the stored set is inside Reconcile: a read made before a local
	// change was stored must not be applied after that change went live.
	return v.rt.Reconcile(func(c router.VirtualModelChanges) error {
		var stored map[string]string
		if err := v.c.call(ctx, "load", func(ctx context.Context) error {
			var err error
			stored, err = v.c.rdb.HGetAll(ctx, v.hash()).Result()
			return err
		}); err != nil {
			return err
		}
		v.apply(c, stored)
		return nil
	})
}

func (v *VirtualModels) apply(c router.VirtualModelChanges, stored map[string]string) {
	local := map[string]router.VirtualModel{}
	for _, vm := range c.List() {
		local[vm.Source] = vm
	}
	sources := make([]string, 0, len(stored))
	for s := range stored {
		sources = append(sources, s)
	}
	slices.Sort(sources)
	for _, source := range sources {
		enc := stored[source]
		cur, ok := local[source]
		delete(local, source)
		if ok && cur.ConfigManaged {
			v.log.Debug("shared state: a stored virtual model is defined in this replica's config file; the file wins", "source", source)
			continue
		}
		if ok && encodeSpec(cur.Spec) == enc {
			continue
		}
		var spec config.VirtualModel
		if err := yaml.Unmarshal([]byte(enc), &spec); err != nil {
			v.log.Warn("shared state: skipping a stored virtual model that does not parse", "source", source, "error", err.Error())
			continue
		}
		if err := c.Upsert(router.FromConfig(v.failover, spec, false)); err != nil {
			v.log.Warn("shared state: skipping a stored virtual model", "source", source, "error", err.Error())
		}
	}
	for source, vm := range local {
		if vm.ConfigManaged {
			continue
		}
		if err := c.Delete(source); err != nil && !errors.Is(err, router.ErrVirtualModelNotFound) {
			v.log.Warn("shared state: could not remove a virtual model deleted elsewhere", "source", source, "error", err.Error())
		}
	}
}

func encodeSpec(spec config.VirtualModel) string {
	out, err := yaml.Marshal(spec)
	if err != nil {
		return ""
	}
	return string(out)
}
