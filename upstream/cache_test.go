package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

// testClock is a clock the cache reads instead of time.Now.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// cached is a client with a cache on a simulator, and the cache's clock.
type cached struct {
	c     *Client
	ca    *Cache
	sim   *sim.Server
	clock *testClock
}

func newCached(t *testing.T, cfg CacheConfig) *cached {
	t.Helper()
	s := sim.New(sim.Options{})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 64 << 20
	}
	if cfg.KeyRecheck == 0 {
		cfg.KeyRecheck = 30 * time.Second
	}
	ca, err := NewCache(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clock := &testClock{t: time.Now()}
	ca.now = clock.now
	c, err := NewClient(srv.URL, WithCache(ca), WithRetry(RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	return &cached{c: c, ca: ca, sim: s, clock: clock}
}

func keyed(key string) context.Context { return WithAPIKey(context.Background(), key) }

// firstBudget is the id of the first budget key sees.
func (h *cached) firstBudget(t *testing.T, key string) string {
	t.Helper()
	p, err := h.c.Budgets.List(keyed(key), &ListOptions{Limit: 1})
	if err != nil || len(p.Data) == 0 {
		t.Fatalf("List: %v, %v", p, err)
	}
	return p.Data[0].ID
}

// calls reads op through the cache with key and returns the upstream calls
// it made.
func (h *cached) calls(t *testing.T, ctx context.Context, op string, read func(context.Context) error) int64 {
	t.Helper()
	before := h.sim.Calls(op)
	if err := read(ctx); err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return h.sim.Calls(op) - before
}

func TestCacheServesOnlyTheKeyThatFetched(t *testing.T) {
	t.Parallel()
	h := newCached(t, CacheConfig{})
	id := h.firstBudget(t, sim.DemoKey)
	get := func(ctx context.Context) error { _, err := h.c.Budgets.Get(ctx, id); return err }
	if n := h.calls(t, keyed(sim.DemoKey), ops.GetBudget, get); n != 1 {
		t.Fatalf("first read: %d calls, want 1", n)
	}
	ctx, stats := WithCacheStats(keyed(sim.DemoKey))
	if n := h.calls(t, ctx, ops.GetBudget, get); n != 0 {
		t.Fatalf("second read: %d calls, want 0 (a hit)", n)
	}
	if stats.Hits() != 1 || stats.Misses() != 0 {
		t.Errorf("stats: %d hits, %d misses; want 1, 0", stats.Hits(), stats.Misses())
	}
	// Another key of the organization reads for itself.
	if n := h.calls(t, keyed(sim.ReadOnlyKey), ops.GetBudget, get); n != 1 {
		t.Errorf("another key: %d calls, want 1: it got an entry it did not fetch", n)
	}
	// Another organization's key is told the upstream's answer: not found.
	if _, err := h.c.Budgets.Get(keyed(sim.OtherOrgKey), id); !errors.Is(err, ErrNotFound) {
		t.Errorf("another organization's key: %v, want ErrNotFound", err)
	}
}

func TestCacheTTL(t *testing.T) {
	t.Parallel()
	h := newCached(t, CacheConfig{TTL: map[string]time.Duration{ops.ListBudgets: 10 * time.Second}})
	list := func(ctx context.Context) error { _, err := h.c.Budgets.List(ctx, nil); return err }
	ctx := keyed(sim.DemoKey)
	h.calls(t, ctx, ops.ListBudgets, list)
	h.clock.advance(9 * time.Second)
	cs := WithCacheStatsAt(ctx)
	if n := h.calls(t, cs.ctx, ops.ListBudgets, list); n != 0 {
		t.Errorf("within the TTL: %d calls, want 0", n)
	}
	if age := cs.stats.Age(h.clock.now()); age != 9*time.Second {
		t.Errorf("age %v, want 9s", age)
	}
	h.clock.advance(time.Second)
	if n := h.calls(t, ctx, ops.ListBudgets, list); n != 1 {
		t.Errorf("at the TTL: %d calls, want 1", n)
	}
	// An operation without a TTL is not cached.
	lookback := func(ctx context.Context) error { _, err := h.c.Budgets.LookbackPreview(ctx); return err }
	h.calls(t, ctx, ops.BudgetLookbackGet, lookback)
	if n := h.calls(t, ctx, ops.BudgetLookbackGet, lookback); n != 1 {
		t.Errorf("an operation without a TTL: %d calls, want 1", n)
	}
}

// statsCtx is a context with its CacheStats.
type statsCtx struct {
	ctx   context.Context
	stats *CacheStats
}

func WithCacheStatsAt(ctx context.Context) statsCtx {
	ctx, s := WithCacheStats(ctx)
	return statsCtx{ctx, s}
}

func TestCacheRefresh(t *testing.T) {
	t.Parallel()
	h := newCached(t, CacheConfig{})
	list := func(ctx context.Context) error { _, err := h.c.Budgets.List(ctx, nil); return err }
	h.calls(t, keyed(sim.DemoKey), ops.ListBudgets, list)
	h.clock.advance(5 * time.Second)
	if n := h.calls(t, WithCacheRefresh(keyed(sim.DemoKey)), ops.ListBudgets, list); n != 1 {
		t.Fatalf("refresh: %d calls, want 1", n)
	}
	cs := WithCacheStatsAt(keyed(sim.DemoKey))
	if n := h.calls(t, cs.ctx, ops.ListBudgets, list); n != 0 {
		t.Fatalf("after the refresh: %d calls, want 0", n)
	}
	if age := cs.stats.Age(h.clock.now()); age != 0 {
		t.Errorf("after the refresh the entry is %v old, want 0: the refresh was not kept", age)
	}
}

func TestCacheKeyRecheck(t *testing.T) {
	t.Parallel()
	h := newCached(t, CacheConfig{KeyRecheck: 5 * time.Second, TTL: map[string]time.Duration{ops.ListBudgets: time.Hour,
		ops.GetBudget: time.Hour}})
	id := h.firstBudget(t, sim.DemoKey)
	get := func(ctx context.Context) error { _, err := h.c.Budgets.Get(ctx, id); return err }
	ctx := keyed(sim.DemoKey)
	h.calls(t, ctx, ops.GetBudget, get)
	h.clock.advance(4 * time.Second)
	if n := h.calls(t, ctx, ops.GetBudget, get); n != 0 {
		t.Fatalf("within -key-recheck: %d calls, want 0", n)
	}
	h.clock.advance(2 * time.Second)
	if n := h.calls(t, ctx, ops.GetBudget, get); n != 1 {
		t.Fatalf("past -key-recheck: %d calls, want 1 (the key is checked first)", n)
	}
	if n := h.calls(t, ctx, ops.GetBudget, get); n != 0 {
		t.Fatalf("once checked: %d calls, want 0", n)
	}
	h.sim.RevokeKey(sim.DemoKey)
	h.clock.advance(6 * time.Second)
	if _, err := h.c.Budgets.Get(ctx, id); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("a revoked key past -key-recheck: %v, want ErrUnauthorized", err)
	}
	// Refused, it reads nothing cached, even an entry that is fresh.
	if _, err := h.c.Budgets.List(ctx, nil); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("a refused key: %v, want ErrUnauthorized", err)
	}
	h.sim.RestoreKey(sim.DemoKey)
	if n := h.calls(t, ctx, ops.GetBudget, get); n != 1 {
		t.Fatalf("restored: %d calls, want 1", n)
	}
	if n := h.calls(t, ctx, ops.GetBudget, get); n != 0 {
		t.Fatalf("restored and accepted: %d calls, want 0", n)
	}
}

func TestCacheStaleIfError(t *testing.T) {
	t.Parallel()
	ttl := map[string]time.Duration{ops.ListBudgets: 10 * time.Second}
	h := newCached(t, CacheConfig{TTL: ttl, StaleIfError: time.Minute, KeyRecheck: time.Hour})
	ctx := keyed(sim.DemoKey)
	want, err := h.c.Budgets.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.clock.advance(30 * time.Second)
	h.sim.SetFaults(sim.Faults{Error500: 1})
	cs := WithCacheStatsAt(ctx)
	got, err := h.c.Budgets.List(cs.ctx, nil)
	if err != nil || len(got.Data) != len(want.Data) {
		t.Fatalf("an expired entry when the refresh fails with a 500: %v, %v; want the entry", got, err)
	}
	if !cs.stats.Stale() || cs.stats.Age(h.clock.now()) != 30*time.Second {
		t.Errorf("stale %v, age %v; want true, 30s", cs.stats.Stale(), cs.stats.Age(h.clock.now()))
	}
	// Past the stale window, the failure is the answer.
	h.clock.advance(41 * time.Second)
	if _, err := h.c.Budgets.List(ctx, nil); !errors.Is(err, ErrUnavailable) {
		t.Errorf("past the stale window: %v, want ErrUnavailable", err)
	}
	// A 4xx is not the upstream's fault: no stale answer.
	h2 := newCached(t, CacheConfig{TTL: ttl, StaleIfError: time.Minute, KeyRecheck: time.Hour})
	if _, err := h2.c.Budgets.List(ctx, nil); err != nil {
		t.Fatal(err)
	}
	h2.clock.advance(30 * time.Second)
	h2.sim.SetFaults(sim.Faults{RateLimit429: 1})
	if _, err := h2.c.Budgets.List(ctx, nil); !errors.Is(err, ErrRateLimited) {
		t.Errorf("a 429: %v, want ErrRateLimited", err)
	}
}

func TestCacheWritesEvictForEveryKey(t *testing.T) {
	t.Parallel()
	h := newCached(t, CacheConfig{TTL: map[string]time.Duration{ops.ListBudgets: time.Hour, ops.GetBudget: time.Hour,
		ops.GetBudgetActuals: time.Hour}, KeyRecheck: time.Hour})
	id := h.firstBudget(t, sim.DemoKey)
	reader := keyed(sim.ReadOnlyKey)
	get := func(ctx context.Context) error { _, err := h.c.Budgets.Get(ctx, id); return err }
	actuals := func(ctx context.Context) error { _, err := h.c.Budgets.Actuals(ctx, id); return err }
	list := func(ctx context.Context) error { _, err := h.c.Budgets.List(ctx, nil); return err }
	other := keyed(sim.OtherOrgKey)
	for _, read := range []struct {
		op string
		f  func(context.Context) error
	}{{ops.GetBudget, get}, {ops.GetBudgetActuals, actuals}, {ops.ListBudgets, list}} {
		h.calls(t, reader, read.op, read.f)
	}
	// The other organization's key, once the cache knows its organization
	// from its first answer, has its list pages evicted by its own
	// organization's writes only.
	h.calls(t, other, ops.ListBudgets, list)
	h.calls(t, WithCacheRefresh(other), ops.ListBudgets, list)

	name := "renamed by the cache test"
	if _, err := h.c.Budgets.Update(keyed(sim.DemoKey), id, &BudgetUpdate{Name: &name}, nil); err != nil {
		t.Fatal(err)
	}
	b, err := h.c.Budgets.Get(reader, id)
	if err != nil || b.Budget.Name != name {
		t.Fatalf("another key's read after an update: %v, %v; want the new name", b, err)
	}
	for _, read := range []struct {
		op string
		f  func(context.Context) error
	}{{ops.GetBudgetActuals, actuals}, {ops.ListBudgets, list}} {
		if n := h.calls(t, reader, read.op, read.f); n != 1 {
			t.Errorf("%s after an update: %d calls, want 1", read.op, n)
		}
	}
	if n := h.calls(t, other, ops.ListBudgets, list); n != 0 {
		t.Errorf("another organization's list after an update: %d calls, want 0 (not evicted)", n)
	}

	// A create evicts the organization's list pages.
	created, err := h.c.Budgets.Create(keyed(sim.DemoKey), &BudgetCreate{Name: "made by the cache test", NumberOfPeriods: 12,
		StartDate: mustDate("2026-01-01"), ExplorerReportID: b.Budget.ExplorerReportID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.c.Budgets.List(reader, &ListOptions{Limit: MaxPageSize})
	if err != nil || !holds(p.Data, created.ID) {
		t.Fatalf("another key's list after a create: %v; want the new budget", err)
	}
	// A delete evicts the budget's reads.
	if _, err := h.c.Budgets.Delete(keyed(sim.DemoKey), id); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Budgets.Get(reader, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("another key's read after a delete: %v, want ErrNotFound", err)
	}
}

func holds(bs []Budget, id string) bool {
	for _, b := range bs {
		if b.ID == id {
			return true
		}
	}
	return false
}

func TestCacheSharesConcurrentMisses(t *testing.T) {
	t.Parallel()
	h := newCached(t, CacheConfig{})
	h.sim.SetLatency(sim.Latency{Fixed: 50 * time.Millisecond})
	ctx := keyed(sim.DemoKey)
	// Accept the key first, so the concurrent reads need no recheck.
	if _, err := h.c.Budgets.LookbackPreview(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := h.c.Budgets.List(ctx, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := h.sim.Calls(ops.ListBudgets); n != 1 {
		t.Errorf("20 concurrent misses of one entry made %d calls, want 1", n)
	}
}

func TestCacheBytesBound(t *testing.T) {
	const maxBytes = 256 << 10
	h := newCached(t, CacheConfig{MaxBytes: maxBytes})
	ctx := keyed(sim.DemoKey)
	const queries = 2000
	for i := range queries {
		q := &ExplorerQuery{DateRange: DateRange{Start: mustDate("2026-01-01"), End: mustDate("2026-03-31")},
			GroupBy: "product_product_name", CostType: "line_item_unblended_cost", Granularity: "day",
			Filters: []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"dimension":"product_product_name","operator":"not_in","values":["x%d"]}`, i))}}
		if _, err := h.c.Explorer.Summary(ctx, q); err != nil {
			t.Fatal(err)
		}
		if b := h.ca.Bytes(); b > maxBytes {
			t.Fatalf("after %d distinct queries the cache holds %d bytes, over its bound %d", i+1, b, maxBytes)
		}
	}
	st := h.ca.Stats()[ops.ExplorerSummary]
	if st.EvictedBySize == 0 || st.Bytes < maxBytes/2 {
		t.Fatalf("no entry was evicted for size, or the cache is nearly empty: %+v", st)
	}
	// An answer larger than an eighth of the bound is not worth keeping.
	q := &ExplorerQuery{DateRange: DateRange{Start: mustDate("2026-01-01"), End: mustDate("2026-03-31")},
		GroupBy: "product_product_name", CostType: "line_item_unblended_cost", Granularity: "day"}
	history := func(ctx context.Context) error { _, err := h.c.Explorer.History(ctx, q); return err }
	h.calls(t, ctx, ops.ExplorerHistory, history)
	if n := h.calls(t, ctx, ops.ExplorerHistory, history); n != 1 || h.ca.Stats()[ops.ExplorerHistory].Bytes != 0 {
		t.Errorf("an answer of more than an eighth of the bound was kept")
	}
}

// TestCacheEntryEstimate checks that an entry counts at least what its
// decoded answer holds on the heap, for answers from small to large.
func TestCacheEntryEstimate(t *testing.T) {
	h := newCached(t, CacheConfig{})
	ctx := keyed(sim.DemoKey)
	id := h.firstBudget(t, sim.DemoKey)
	q := &ExplorerQuery{DateRange: DateRange{Start: mustDate("2026-01-01"), End: mustDate("2026-01-31")},
		GroupBy: "product_product_name", CostType: "line_item_unblended_cost", Granularity: "day"}
	reads := []struct {
		name   string
		op     string
		read   func() error
		decode func([]byte) answerEnvelope
	}{
		{"a page of 200 budgets", ops.ListBudgets, func() error { _, err := h.c.Budgets.List(ctx, &ListOptions{Limit: 200}); return err },
			decodeAs[[]Budget]},
		{"a budget", ops.GetBudget, func() error { _, err := h.c.Budgets.Get(ctx, id); return err }, decodeAs[budgetDetailWire]},
		{"its actuals", ops.GetBudgetActuals, func() error { _, err := h.c.Budgets.Actuals(ctx, id); return err }, decodeAs[BudgetActuals]},
		{"a summary", ops.ExplorerSummary, func() error { _, err := h.c.Explorer.Summary(ctx, q); return err }, decodeAs[ExplorerSummary]},
		{"a month's history", ops.ExplorerHistory, func() error { _, err := h.c.Explorer.History(ctx, q); return err }, decodeAs[ExplorerHistory]},
		{"a month's heatmap", ops.ExplorerHeatmap, func() error { _, err := h.c.Explorer.Heatmap(ctx, q); return err }, decodeAs[ExplorerHeatmap]},
		{"dimension values", ops.ExplorerDimensionValues, func() error { _, err := h.c.Explorer.DimensionValues(ctx, "product_product_name"); return err },
			decodeAs[DimensionValues]},
		{"a page of recommendations", ops.ListRecommendations, func() error { _, err := h.c.Recommendations.List(ctx, &ListOptions{Limit: 200}); return err },
			decodeAs[[]Recommendation]},
		{"a page of anomalies", ops.ListAnomalies, func() error { _, err := h.c.Anomalies.List(ctx, &ListOptions{Limit: 200}); return err },
			decodeAs[[]Anomaly]},
		{"a page of notifications", ops.ListScheduledNotifications, func() error { _, err := h.c.Notifications.ListScheduled(ctx, &ListOptions{Limit: 200}); return err },
			decodeAs[[]ScheduledNotification]},
	}
	for _, r := range reads {
		// The answer's bytes, as the shared cache would hold them.
		var raw []byte
		ca := h.ca
		ca.mu.Lock()
		ca.entries.Purge()
		ca.mu.Unlock()
		keepRaw := &rawStore{}
		ca.shared = keepRaw
		if err := r.read(); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		ca.shared = nil
		raw = keepRaw.last
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			raw = raw[i+1:]
		}
		const copies = 200
		held := make([]answerEnvelope, 0, copies)
		before := heapAlloc()
		for range copies {
			held = append(held, r.decode(raw))
		}
		perEntry := (heapAlloc() - before) / copies
		runtime.KeepAlive(held)
		counted := weight(r.op, len(raw))
		t.Logf("%s: %d bytes of JSON, %d held, %d counted", r.name, len(raw), perEntry, counted)
		if perEntry > counted {
			t.Errorf("%s: an entry holds %d bytes of heap and counts %d", r.name, perEntry, counted)
		}
	}
}

func decodeAs[T any](raw []byte) answerEnvelope {
	env := new(envelope[T])
	if err := decodeAnswer(bytes.NewReader(raw), env); err != nil {
		panic(err)
	}
	return env
}

// rawStore is a SharedCache that keeps the last value stored.
type rawStore struct{ last []byte }

func (s *rawStore) Get(context.Context, string) ([]byte, error) { return nil, nil }
func (s *rawStore) Set(_ context.Context, _ string, v []byte, _ time.Duration) error {
	s.last = v
	return nil
}
func (s *rawStore) Versions(_ context.Context, tags []string) (string, []uint64, error) {
	return "", make([]uint64, len(tags)), nil
}
func (s *rawStore) Bump(context.Context, []string, time.Duration) error { return nil }

func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func mustDate(s string) Date {
	d, err := ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

func TestParseCacheTTL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		check   map[string]time.Duration
		wantErr string
	}{
		{"", map[string]time.Duration{ops.ListBudgets: 30 * time.Second, ops.ExplorerHistory: 5 * time.Minute}, ""},
		{"2m", map[string]time.Duration{ops.ListBudgets: 2 * time.Minute, ops.ExplorerHistory: 2 * time.Minute}, ""},
		{"listBudgets=5s, explorer=1h", map[string]time.Duration{ops.ListBudgets: 5 * time.Second,
			ops.ExplorerSummary: time.Hour, ops.GetBudget: time.Minute}, ""},
		{"getBudget=0", map[string]time.Duration{ops.GetBudget: 0, ops.ListBudgets: 30 * time.Second}, ""},
		{"createBudget=5s", nil, `"createBudget" is no operation the cache keeps`},
		{"listBudgets=soon", nil, `listBudgets: "soon" is not a duration`},
		{"-1s", nil, `"-1s" is not a duration of 0 or more`},
	}
	for _, tc := range tests {
		got, err := ParseCacheTTL(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseCacheTTL(%q) = %v, want an error with %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseCacheTTL(%q): %v", tc.in, err)
		}
		for op, d := range tc.check {
			if got[op] != d {
				t.Errorf("ParseCacheTTL(%q)[%s] = %v, want %v", tc.in, op, got[op], d)
			}
		}
	}
}
