package upstream

import (
	"context"
	"errors"
	"testing"
	"time"

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

// refusingStore is a SharedCache that refuses every bump, as a Redis out of
// memory does, and reads versions as ever.
type refusingStore struct{ rawStore }

func (*refusingStore) Bump(context.Context, []string, time.Duration) error {
	return errors.New("OOM command not allowed when used memory > 'maxmemory'")
}

// TestCacheWriteNotBumped renames a budget another key of the organization
// has cached, while the shared cache refuses the write's bump: that key's
// next read of it is sent, and shows the new name. It was served the entry,
// whose versions the bump never changed.
func TestCacheWriteNotBumped(t *testing.T) {
	t.Parallel()
	h := newCached(t, CacheConfig{Shared: &refusingStore{}})
	id := h.firstBudget(t, sim.DemoKey)
	var got *BudgetDetail
	get := func(ctx context.Context) (err error) { got, err = h.c.Budgets.Get(ctx, id); return err }
	h.calls(t, keyed(sim.ReadOnlyKey), ops.GetBudget, get)
	if n := h.calls(t, keyed(sim.ReadOnlyKey), ops.GetBudget, get); n != 0 {
		t.Fatalf("second read: %d calls, want 0 (a hit)", n)
	}
	name := "Renamed, the bump refused"
	if _, err := h.c.Budgets.Update(keyed(sim.DemoKey), id, &BudgetUpdate{Name: &name}, nil); err != nil {
		t.Fatal(err)
	}
	if n := h.calls(t, keyed(sim.ReadOnlyKey), ops.GetBudget, get); n != 1 || got.Budget.Name != name {
		t.Errorf("after the write: %d calls, name %q; want 1 and %q", n, got.Budget.Name, name)
	}
}
