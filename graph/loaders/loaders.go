// Package loaders holds the per-request dataloaders of the gateway, built on
// github.com/graph-gophers/dataloader/v7.
//
// A Loaders set is made for each HTTP request by Middleware and lives in the
// request's context, so its cache never outlives the request and never mixes
// the bearer keys of two callers. Within a request, a key is fetched once
// however many fields ask for it.
//
// The upstream has no batch endpoint: a batch of n keys is n calls, sent at
// once under a per-request bound on calls in flight. Waiting for a batch to
// fill would add latency to every tier of a nested query, so the batch window
// is zero: a key's call starts as soon as a resolver first asks for it, and a
// nested query costs one upstream latency per tier (measured in
// docs/benchmarks.md).
package loaders

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/graph-gophers/dataloader/v7"

	"github.com/costgw/gateway/upstream"
)

// Options tune the loaders.
type Options struct {
	// MaxConcurrency bounds the upstream calls one request's loaders have in
	// flight at once. Zero means DefaultMaxConcurrency.
	MaxConcurrency int
}

// DefaultMaxConcurrency lets a page of 50 budgets fetch its 50 details and 50
// actuals in one round.
const DefaultMaxConcurrency = 100

// Loaders is one request's set of loaders.
type Loaders struct {
	// Budget loads a budget with metrics and dimensions (getBudget).
	Budget *dataloader.Loader[string, *upstream.BudgetDetail]
	// Actuals loads a budget's actuals (getBudgetActuals).
	Actuals *dataloader.Loader[string, *upstream.BudgetActuals]
	// Planning loads a budget's planning grid (getBudgetPlanning).
	Planning *dataloader.Loader[string, *upstream.BudgetPlanning]
	// Explorer runs Explorer queries, each distinct query once.
	Explorer *dataloader.Loader[ExplorerKey, any]
}

// New returns a fresh set of loaders over c.
func New(c *upstream.Client, o Options) *Loaders {
	n := o.MaxConcurrency
	if n <= 0 {
		n = DefaultMaxConcurrency
	}
	sem := make(chan struct{}, n)
	return &Loaders{
		Budget:   newLoader(sem, c.Budgets.Get),
		Actuals:  newLoader(sem, c.Budgets.Actuals),
		Planning: newLoader(sem, c.Budgets.Planning),
		Explorer: newLoader(sem, explorerFetch(c)),
	}
}

// newLoader returns a loader with no batch window whose batches fetch each
// key with its own call, under the request's semaphore.
func newLoader[K comparable, V any](sem chan struct{}, fetch func(context.Context, K) (V, error)) *dataloader.Loader[K, V] {
	return dataloader.NewBatchedLoader(fanOut(sem, fetch), dataloader.WithWait[K, V](0))
}

// fanOut makes a batch function that fetches each key with its own call, all
// at once under the semaphore, and answers in the order of the keys.
func fanOut[K comparable, V any](sem chan struct{}, fetch func(context.Context, K) (V, error)) dataloader.BatchFunc[K, V] {
	return func(ctx context.Context, keys []K) []*dataloader.Result[V] {
		results := make([]*dataloader.Result[V], len(keys))
		var wg sync.WaitGroup
		for i, key := range keys {
			wg.Go(func() {
				results[i] = fetchOne(ctx, sem, fetch, key)
			})
		}
		wg.Wait()
		return results
	}
}

// fetchOne makes one key's call once the semaphore has room.
func fetchOne[K comparable, V any](ctx context.Context, sem chan struct{}, fetch func(context.Context, K) (V, error), key K) (r *dataloader.Result[V]) {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return &dataloader.Result[V]{Error: ctx.Err()}
	}
	defer func() { <-sem }()
	// A panic in this goroutine is out of reach of gqlgen's recover and of
	// the dataloader's: unrecovered it would end the whole process.
	defer func() {
		if p := recover(); p != nil {
			r = &dataloader.Result[V]{Error: fmt.Errorf("panic in loader fetch: %v", p)}
		}
	}()
	v, err := fetch(ctx, key)
	return &dataloader.Result[V]{Data: v, Error: err}
}

// PrimePlannings records the planning rows a budget record already carries,
// so refetching that budget's planning grid in this request costs no call.
func (l *Loaders) PrimePlannings(ctx context.Context, b *upstream.Budget) {
	if b.Plannings != nil {
		l.Planning.Prime(ctx, b.ID, &upstream.BudgetPlanning{Plannings: b.Plannings})
	}
}

// Forget drops what the loaders hold for a budget, after a write changed it.
func (l *Loaders) Forget(ctx context.Context, budgetID string) {
	l.Budget.Clear(ctx, budgetID)
	l.Actuals.Clear(ctx, budgetID)
	l.Planning.Clear(ctx, budgetID)
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

// ExplorerKey names one Explorer call: its operation id and its canonical
// query (the JSON body, or the dimension key).
type ExplorerKey struct {
	Op  string
	Key string
}

// explorerFetch dispatches an Explorer key to its client method.
func explorerFetch(c *upstream.Client) func(context.Context, ExplorerKey) (any, error) {
	return func(ctx context.Context, k ExplorerKey) (any, error) {
		if k.Op == OpDimensionValues {
			return c.Explorer.DimensionValues(ctx, k.Key)
		}
		var q upstream.ExplorerQuery
		if err := json.Unmarshal([]byte(k.Key), &q); err != nil {
			return nil, err
		}
		switch k.Op {
		case OpSummary:
			return c.Explorer.Summary(ctx, &q)
		case OpPreviousPeriod:
			return c.Explorer.PreviousPeriod(ctx, &q)
		case OpHistory:
			return c.Explorer.History(ctx, &q)
		case OpHeatmap:
			return c.Explorer.Heatmap(ctx, &q)
		}
		return nil, fmt.Errorf("unknown Explorer operation %q", k.Op)
	}
}

// Explorer operation ids, as in the contract.
const (
	OpSummary         = "explorerSummary"
	OpPreviousPeriod  = "explorerPreviousPeriod"
	OpHistory         = "explorerHistory"
	OpHeatmap         = "explorerHeatmap"
	OpDimensionValues = "explorerDimensionValues"
)
