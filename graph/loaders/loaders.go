// Package loaders holds the per-request loaders of the gateway: each keeps
// the thunks of its keys in a github.com/graph-gophers/dataloader/v7 cache.
//
// A Loaders set is made for each HTTP request by Middleware and lives in the
// request's context, so its cache never outlives the request and never mixes
// the bearer keys of two callers. Within a request, a key is fetched once
// however many fields ask for it.
//
// The upstream has no batch endpoint: a batch of n keys would be n calls.
// So a key's call starts as soon as a resolver first asks for it, under a
// per-request bound on calls in flight, and a nested query costs one
// upstream latency per tier (measured in docs/benchmarks.md). dataloader's
// batcher, with no batch window, did the same through two goroutines, a
// timer and a channel for every batch before any call started: the loaders
// use its cache and its Thunk, not its batcher (docs/performance.md, the
// ninth pass).
package loaders

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/graph-gophers/dataloader/v7"

	"github.com/costgw/gateway/graph/cost"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/ops"
)

// Options tune the loaders.
type Options struct {
	// MaxConcurrency bounds the upstream calls one request's loaders have in
	// flight at once. Zero means DefaultMaxConcurrency.
	MaxConcurrency int
	// Logger receives the panics of fetches, once each with its stack; nil
	// discards them.
	Logger *slog.Logger
	// OnPanic, when not nil, is called for every panic of a fetch.
	OnPanic func()
}

// DefaultMaxConcurrency lets a page of 50 budgets fetch its 50 details and 50
// actuals in one round.
const DefaultMaxConcurrency = 100

// Loaders is one request's set of loaders. Each is made on its first use: a
// request uses one to three of the twelve.
type Loaders struct {
	c *upstream.Client
	f fetcher

	budget          lazy[string, *upstream.BudgetDetail]
	actuals         lazy[string, *upstream.BudgetActuals]
	planning        lazy[string, *upstream.BudgetPlanning]
	summary         lazy[ExplorerKey, *upstream.ExplorerSummary]
	previousPeriod  lazy[ExplorerKey, *upstream.ExplorerPreviousPeriod]
	history         lazy[ExplorerKey, *upstream.ExplorerHistory]
	heatmap         lazy[ExplorerKey, *upstream.ExplorerHeatmap]
	dimensionValues lazy[string, *upstream.DimensionValues]
	recommendations lazy[struct{}, []upstream.Recommendation]
	anomalies       lazy[struct{}, []upstream.Anomaly]
	notifications   lazy[struct{}, []upstream.ScheduledNotification]
	budgets         lazy[struct{}, []upstream.Budget]

	// shaped holds what the resolvers made of loaded answers (Shape).
	shaped struct {
		sync.Mutex
		m map[shapeKey]*shapeOnce
	}

	// unestimated holds the keys of the reads the operation's cost
	// estimate did not count (AllowUnestimated).
	unestimated struct {
		sync.Mutex
		keys map[string]struct{}
	}
}

type shapeKey struct {
	v    any
	kind string
}

type shapeOnce struct {
	once sync.Once
	v    any
	err  error
}

// Shape returns what shape makes of v, an answer the request loaded, made
// once in the request for each v and kind: the fields that select one
// loaded answer again (aliases of a field with the same arguments, which
// share its load) share what was made of it, as they share the call. What
// shape returns must not be changed by those who read it.
func Shape[T any](l *Loaders, v any, kind string, shape func() (T, error)) (T, error) {
	l.shaped.Lock()
	if l.shaped.m == nil {
		l.shaped.m = map[shapeKey]*shapeOnce{}
	}
	k := shapeKey{v, kind}
	s := l.shaped.m[k]
	if s == nil {
		s = &shapeOnce{}
		l.shaped.m[k] = s
	}
	l.shaped.Unlock()
	s.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				// The field that made it fails as gqlgen's recover has it;
				// the others that share it fail too, rather than read nothing.
				s.err = fmt.Errorf("shaping %s panicked: %v", kind, r)
				panic(r)
			}
		}()
		s.v, s.err = shape()
	})
	out, _ := s.v.(T)
	return out, s.err
}

// AllowUnestimated reports whether a read the operation's cost estimate did
// not count may be made for key: yes for a key allowed before in the
// request, and for at most allow keys in all. The one such read is the
// planning grid of a budget record that came without its rows.
func (l *Loaders) AllowUnestimated(key string, allow int) bool {
	u := &l.unestimated
	u.Lock()
	defer u.Unlock()
	if _, ok := u.keys[key]; ok {
		return true
	}
	if len(u.keys) >= allow {
		return false
	}
	if u.keys == nil {
		u.keys = map[string]struct{}{}
	}
	u.keys[key] = struct{}{}
	return true
}

// lazy is a loader made on first use. Each accessor makes its loader in
// the function it gives to once.Do, so that the fetch function it binds is
// made only then.
type lazy[K comparable, V any] struct {
	once sync.Once
	l    atomic.Pointer[Loader[K, V]] // nil until made
}

// Loader is one request's loader of one kind of key: a key's call starts
// when a resolver first asks for it, and every later ask gets the same
// thunk from the loader's cache.
type Loader[K comparable, V any] struct {
	f     *fetcher
	fetch func(context.Context, K) (V, error)
	mu    sync.Mutex // held while a key's thunk is made and cached
	cache *dataloader.InMemoryCache[K, V]
}

// Load returns the thunk of key: the one in the cache if it is there, or a
// new one whose call starts now.
func (l *Loader[K, V]) Load(ctx context.Context, key K) dataloader.Thunk[V] {
	t, c := l.claim(ctx, key)
	if c == nil {
		return t
	}
	go l.run(ctx, c, key)
	return t
}

// Get returns key's value: the one of the call in the cache if there is one,
// or that of a new call made on this goroutine, which would only wait for
// it on another (a handoff and a wake-up less). Later asks of key share the
// call as they share one Load starts. For a caller that waits at once and
// stands shallow in its stack (a budget's reads); one that starts reads to
// wait for later calls Load (docs/performance.md, the twelfth pass, has
// the measurement of the dashboard's reports both ways).
func (l *Loader[K, V]) Get(ctx context.Context, key K) (V, error) {
	t, c := l.claim(ctx, key)
	if c == nil {
		return t()
	}
	l.run(ctx, c, key)
	return c.v, c.err
}

// claim returns the thunk of key's call: the one in the cache, with no call,
// or that of a new call, cached here, which the caller must run.
func (l *Loader[K, V]) claim(ctx context.Context, key K) (dataloader.Thunk[V], *call[V]) {
	if t, ok := l.cache.Get(ctx, key); ok {
		return t, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.cache.Get(ctx, key); ok {
		return t, nil
	}
	c := &call[V]{done: make(chan struct{})}
	t := dataloader.Thunk[V](c.wait)
	l.cache.Set(ctx, key, t)
	return t, c
}

// run makes key's call and answers c's waiters, however the call ends.
func (l *Loader[K, V]) run(ctx context.Context, c *call[V], key K) {
	defer close(c.done)
	c.v, c.err = fetchOne(ctx, l.f, l.fetch, key)
}

// call is one key's call and, once done is closed, its answer.
type call[V any] struct {
	done chan struct{}
	v    V
	err  error
}

func (c *call[V]) wait() (V, error) {
	<-c.done
	return c.v, c.err
}

// Prime gives key the value v, unless the loader holds key already.
func (l *Loader[K, V]) Prime(ctx context.Context, key K, v V) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.cache.Get(ctx, key); !ok {
		l.cache.Set(ctx, key, func() (V, error) { return v, nil })
	}
}

// Clear drops what the loader holds for key.
func (l *Loader[K, V]) Clear(ctx context.Context, key K) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cache.Delete(ctx, key)
}

// has reports whether the loader was made and holds key.
func (z *lazy[K, V]) has(ctx context.Context, key K) bool {
	l := z.l.Load()
	if l == nil {
		return false
	}
	_, ok := l.cache.Get(ctx, key)
	return ok
}

// clear drops what the loader holds for key, if it was made.
func (z *lazy[K, V]) clear(ctx context.Context, key K) {
	if l := z.l.Load(); l != nil {
		l.Clear(ctx, key)
	}
}

// Budget loads a budget with metrics and dimensions (getBudget).
func (l *Loaders) Budget() *Loader[string, *upstream.BudgetDetail] {
	l.budget.once.Do(func() { l.budget.l.Store(newLoader(&l.f, l.c.Budgets.Get)) })
	return l.budget.l.Load()
}

// Actuals loads a budget's actuals (getBudgetActuals).
func (l *Loaders) Actuals() *Loader[string, *upstream.BudgetActuals] {
	l.actuals.once.Do(func() { l.actuals.l.Store(newLoader(&l.f, l.c.Budgets.Actuals)) })
	return l.actuals.l.Load()
}

// Planning loads a budget's planning grid (getBudgetPlanning).
func (l *Loaders) Planning() *Loader[string, *upstream.BudgetPlanning] {
	l.planning.once.Do(func() { l.planning.l.Store(newLoader(&l.f, l.c.Budgets.Planning)) })
	return l.planning.l.Load()
}

// Summary loads an Explorer summary, each distinct query once, as the
// three below do theirs.
func (l *Loaders) Summary() *Loader[ExplorerKey, *upstream.ExplorerSummary] {
	l.summary.once.Do(func() { l.summary.l.Store(newLoader(&l.f, explorerFetch(l.c.Explorer.Summary))) })
	return l.summary.l.Load()
}

func (l *Loaders) PreviousPeriod() *Loader[ExplorerKey, *upstream.ExplorerPreviousPeriod] {
	l.previousPeriod.once.Do(func() { l.previousPeriod.l.Store(newLoader(&l.f, explorerFetch(l.c.Explorer.PreviousPeriod))) })
	return l.previousPeriod.l.Load()
}

func (l *Loaders) History() *Loader[ExplorerKey, *upstream.ExplorerHistory] {
	l.history.once.Do(func() { l.history.l.Store(newLoader(&l.f, explorerFetch(l.c.Explorer.History))) })
	return l.history.l.Load()
}

func (l *Loaders) Heatmap() *Loader[ExplorerKey, *upstream.ExplorerHeatmap] {
	l.heatmap.once.Do(func() { l.heatmap.l.Store(newLoader(&l.f, explorerFetch(l.c.Explorer.Heatmap))) })
	return l.heatmap.l.Load()
}

// DimensionValues loads the values of a dimension.
func (l *Loaders) DimensionValues() *Loader[string, *upstream.DimensionValues] {
	l.dimensionValues.once.Do(func() { l.dimensionValues.l.Store(newLoader(&l.f, l.c.Explorer.DimensionValues)) })
	return l.dimensionValues.l.Load()
}

// ScanRecords is how many records of a list a scan reads at most: the
// pages the cost estimate allows, of the upstream's largest.
const ScanRecords = cost.MaxScanPages * cost.PageSize

// scan reads the first cost.MaxScanPages pages of the list op, whose pages
// fetch returns, asking for the largest, and keeps at most their first
// ScanRecords records. The bound is in calls, as the cost estimate counts
// them: an upstream that applies a smaller page than asked (pagination.limit
// says which it applied) once made a scan bounded by records alone 100
// calls of 10 records.
func scan[T any](op string, fetch func(context.Context, *upstream.ListOptions) (*upstream.Page[T], error)) func(context.Context, struct{}) ([]T, error) {
	return func(ctx context.Context, _ struct{}) ([]T, error) {
		var out []T
		walk := upstream.NewPageWalk(op, fetch, "", cost.MaxScanPages)
		for len(out) < ScanRecords {
			page, err := walk.Next(ctx, upstream.MaxPageSize)
			if err != nil {
				return nil, err
			}
			if page == nil {
				break
			}
			out = append(out, page.Data[:min(len(page.Data), ScanRecords-len(out))]...)
		}
		return out, nil
	}
}

// New returns a fresh set of loaders over c.
func New(c *upstream.Client, o Options) *Loaders {
	n := o.MaxConcurrency
	if n <= 0 {
		n = DefaultMaxConcurrency
	}
	return &Loaders{c: c, f: fetcher{sem: make(chan struct{}, n), log: o.Logger, onPanic: o.OnPanic}}
}

// fetcher makes the calls of one request's loaders: under the request's
// bound on calls in flight, and with their panics recovered and logged.
type fetcher struct {
	sem     chan struct{}
	log     *slog.Logger
	onPanic func()
}

// newLoader returns a loader whose keys are fetched with fetch under the
// request's semaphore.
func newLoader[K comparable, V any](f *fetcher, fetch func(context.Context, K) (V, error)) *Loader[K, V] {
	return &Loader[K, V]{f: f, fetch: fetch, cache: dataloader.NewCache[K, V]()}
}

// fetchOne makes one key's call once the semaphore has room.
func fetchOne[K comparable, V any](ctx context.Context, f *fetcher, fetch func(context.Context, K) (V, error), key K) (v V, err error) {
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return v, ctx.Err()
	}
	defer func() { <-f.sem }()
	// A panic in this goroutine is out of reach of gqlgen's recover:
	// unrecovered it would end the whole process.
	defer func() {
		if p := recover(); p != nil {
			if f.onPanic != nil {
				f.onPanic()
			}
			if f.log != nil {
				f.log.LogAttrs(ctx, slog.LevelError, "panic in a loader's fetch",
					slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
			}
			err = fmt.Errorf("panic in loader fetch: %v", p)
		}
	}()
	return fetch(ctx, key)
}

// RecommendationList returns the request's scan of the recommendations.
func (l *Loaders) RecommendationList(ctx context.Context) ([]upstream.Recommendation, error) {
	l.recommendations.once.Do(func() {
		l.recommendations.l.Store(newLoader(&l.f, scan(ops.ListRecommendations, l.c.Recommendations.List)))
	})
	return l.recommendations.l.Load().Load(ctx, struct{}{})()
}

// AnomalyList returns the request's scan of the anomalies.
func (l *Loaders) AnomalyList(ctx context.Context) ([]upstream.Anomaly, error) {
	l.anomalies.once.Do(func() { l.anomalies.l.Store(newLoader(&l.f, scan(ops.ListAnomalies, l.c.Anomalies.List))) })
	return l.anomalies.l.Load().Load(ctx, struct{}{})()
}

// NotificationList returns the request's scan of the scheduled notifications.
func (l *Loaders) NotificationList(ctx context.Context) ([]upstream.ScheduledNotification, error) {
	l.notifications.once.Do(func() {
		l.notifications.l.Store(newLoader(&l.f, scan(ops.ListScheduledNotifications, l.c.Notifications.ListScheduled)))
	})
	return l.notifications.l.Load().Load(ctx, struct{}{})()
}

// BudgetList returns the request's scan of the budgets.
func (l *Loaders) BudgetList(ctx context.Context) ([]upstream.Budget, error) {
	l.budgets.once.Do(func() { l.budgets.l.Store(newLoader(&l.f, scan(ops.ListBudgets, l.c.Budgets.List))) })
	return l.budgets.l.Load().Load(ctx, struct{}{})()
}

// PrimePlannings records the planning rows a budget record already carries,
// so refetching that budget's planning grid in this request costs no call.
func (l *Loaders) PrimePlannings(ctx context.Context, b *upstream.Budget) {
	if b.Plannings != nil {
		l.Planning().Prime(ctx, b.ID, &upstream.BudgetPlanning{Plannings: b.Plannings})
	}
}

// Started reports whether each of the reads r of budget id (cost.Detail,
// cost.Actuals, cost.Planning) has been started in this request, or its
// answer primed: a field that needs only these waits for a call under way
// and starts none.
func (l *Loaders) Started(ctx context.Context, id string, r cost.Read) bool {
	return (r&cost.Detail == 0 || l.budget.has(ctx, id)) &&
		(r&cost.Actuals == 0 || l.actuals.has(ctx, id)) &&
		(r&cost.Planning == 0 || l.planning.has(ctx, id))
}

// Forget drops what the loaders hold for a budget, after a write changed it.
func (l *Loaders) Forget(ctx context.Context, budgetID string) {
	l.budget.clear(ctx, budgetID)
	l.actuals.clear(ctx, budgetID)
	l.planning.clear(ctx, budgetID)
}

type ctxKey struct{}

// With returns a context carrying l.
func With(ctx context.Context, l *Loaders) context.Context {
	return context.WithValue(ctx, ctxKey{}, l)
}

// For returns the loaders of the request ctx belongs to, or nil outside one.
func For(ctx context.Context) *Loaders {
	l, _ := ctx.Value(ctxKey{}).(*Loaders)
	return l
}

// Middleware gives every request its own Loaders.
func Middleware(c *upstream.Client, o Options, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(With(r.Context(), New(c, o))))
	})
}

// ExplorerKey is one Explorer query, in a comparable form a loader can key
// on: the same query twice in a request is fetched once.
type ExplorerKey struct {
	Start, End                     upstream.Date
	GroupBy, CostType, Granularity string
	// Filters is the filters' JSON array, as given: the contract does not
	// say what a filter is, so two queries are the same only if their
	// filters are written the same.
	Filters string
}

// NewExplorerKey returns the key of q.
func NewExplorerKey(q *upstream.ExplorerQuery) ExplorerKey {
	k := ExplorerKey{Start: q.DateRange.Start, End: q.DateRange.End, GroupBy: q.GroupBy, CostType: q.CostType,
		Granularity: q.Granularity, Filters: "[]"}
	if len(q.Filters) > 0 {
		var b strings.Builder
		b.WriteByte('[')
		for i, f := range q.Filters {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(f)
		}
		b.WriteByte(']')
		k.Filters = b.String()
	}
	return k
}

// Query returns the upstream body of the key's query.
func (k ExplorerKey) Query() (*upstream.ExplorerQuery, error) {
	q := &upstream.ExplorerQuery{DateRange: upstream.DateRange{Start: k.Start, End: k.End},
		GroupBy: k.GroupBy, CostType: k.CostType, Granularity: k.Granularity}
	if err := json.Unmarshal([]byte(k.Filters), &q.Filters); err != nil {
		return nil, fmt.Errorf("explorer filters: %w", err)
	}
	return q, nil
}

// explorerFetch adapts an Explorer method of the client to a loader's fetch.
func explorerFetch[T any](call func(context.Context, *upstream.ExplorerQuery) (*T, error)) func(context.Context, ExplorerKey) (*T, error) {
	return func(ctx context.Context, k ExplorerKey) (*T, error) {
		q, err := k.Query()
		if err != nil {
			return nil, err
		}
		return call(ctx, q)
	}
}
