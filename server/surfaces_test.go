package server

import (
	"slices"
	"testing"

	"github.com/switchyard/switchyard/metrics"
)

// The surfaces requests arrive on are the ones metrics made gauges for.
func TestSurfacesAreMetricsSurfaces(t *testing.T) {
	for _, s := range []string{surfaceREST, surfaceGRPC} {
		if !slices.Contains(metrics.Surfaces[:], s) {
			t.Errorf("surface %q is not in metrics.Surfaces %v", s, metrics.Surfaces)
		}
	}
}
