package upstream

import (
	"errors"
	"testing"

	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

// TestCacheCountsFailedCallsAsMisses reads another organization's budget,
// which the upstream answers 404: the call was sent, so the request's
// CacheStats and the cache's counters count a miss, whether it is the key's
// first call (its admission) or a later one (shared with concurrent
// misses). A later one counted nothing: extensions.cache said no miss and
// no hit for a real call.
func TestCacheCountsFailedCallsAsMisses(t *testing.T) {
	t.Parallel()
	for _, admitted := range []bool{false, true} {
		h := newCached(t, CacheConfig{})
		id := h.firstBudget(t, sim.DemoKey)
		if admitted {
			if _, err := h.c.Budgets.List(keyed(sim.OtherOrgKey), nil); err != nil {
				t.Fatal(err)
			}
		}
		cs := WithCacheStatsAt(keyed(sim.OtherOrgKey))
		if _, err := h.c.Budgets.Get(cs.ctx, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("admitted %v: another organization's budget: %v, want ErrNotFound", admitted, err)
		}
		if cs.stats.Misses() != 1 || cs.stats.Hits() != 0 {
			t.Errorf("admitted %v: the request's stats: %d misses, %d hits; want 1 and 0", admitted, cs.stats.Misses(), cs.stats.Hits())
		}
		if got := h.ca.Stats()[ops.GetBudget]; got.Misses != 1 || got.Hits != 0 {
			t.Errorf("admitted %v: the cache's getBudget counters: %+v, want 1 miss", admitted, got)
		}
	}
}
