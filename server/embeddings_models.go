package server

import (
	"slices"
	"strings"

	"github.com/switchyard/switchyard/providers"
	"github.com/switchyard/switchyard/router"
)

// modeEmbedding marks embedding models in /v1/models ("mode").
const modeEmbedding = "embedding"

// embedsRule says which provider models /v1/models marks as embedding models: a
// model of a provider that serves embeddings (providers.Embedder) whose name
// contains "embed" (text-embedding-3-small, nomic-embed-text, sim-embed-1, ...)
// or that its provider lists under embedding_models.
func embedsRule(targets map[string]router.Target, infos map[string]ProviderInfo) func(router.Route) bool {
	return func(r router.Route) bool {
		t, ok := targets[r.Provider]
		if !ok {
			return false
		}
		if _, ok := t.Provider.(providers.Embedder); !ok {
			return false
		}
		return strings.Contains(strings.ToLower(r.Model), "embed") || slices.Contains(infos[r.Provider].EmbeddingModels, r.Model)
	}
}

// mode is a listed model's "mode": a provider model (provider/model) as embedsRule
// says, a virtual model when every one of its targets is an embedding model.
func (s *modelService) mode(id string, virtual bool) *string {
	if s.embeds == nil {
		return nil
	}
	embedding := false
	if virtual {
		vm, err := s.router.VirtualModel(id)
		if err != nil {
			return nil
		}
		embedding = len(vm.Targets) > 0
		for _, t := range vm.Targets {
			route, err := s.router.Resolve(t.Model)
			if err != nil || !s.embeds(route) {
				embedding = false
				break
			}
		}
	} else if route, err := s.router.Resolve(id); err == nil {
		embedding = s.embeds(route)
	}
	if !embedding {
		return nil
	}
	m := modeEmbedding
	return &m
}
