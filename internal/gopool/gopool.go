// Package gopool runs work on goroutines kept from earlier requests: the
// executor's concurrent fields, and the first few upstream calls a request
// has in flight. A new goroutine starts with a small stack, and work deep in
// gqlgen's executor or in the JSON decoder soon needs a deep one, so the
// runtime copied its stack a few times as it grew; a goroutine kept from
// earlier work has its grown stack already.
//
// (Each request's handler ran here from the third pass to the ninth,
// because the deadline guard ran it on a goroutine of its own; since the
// tenth the guard lets it run on the request's own goroutine, which net/http
// keeps for the connection's requests, and the hand-off is gone:
// docs/performance.md.)
//
// The executor resolves an object's concurrent fields (those that load) each
// on a goroutine but the first (executor.Object.Dispatch, graph/internal/executor), and waits
// for them before the next object: a request has a few of them at a time,
// and each grew a stack as deep as the executor's for every budget of an
// overview. On kept goroutines, the CPU the overview spent growing stacks
// went from 9.0 to 6.1 % of its profile at one client, and from 6.0 to 4.1 %
// at 50 (docs/performance.md).
//
// Of the upstream calls, which decode their answer deep in the JSON
// decoder, only the first four a request has in flight (graph/loaders'
// pooledCalls: a budget's detail and actuals, the dashboard's reports). A
// wide tier has as many calls as budgets (a hundred for one overview): a
// pool of them was mostly idle goroutines whose stacks the collector had
// shrunk meanwhile, and it cost the overview 3 to 10 % more CPU in the
// runs that tried it.
//
// The pool is github.com/panjf2000/ants: unbounded (the gateway bounds its
// requests in flight itself), the most recently idle goroutine first, and a
// goroutine idle for longer than a few seconds let go. A panic that escapes
// a function run here ends the process, as it would on a goroutine of its
// own: each field recovers what its resolver panics with, and each loader's
// call what its fetch panics with.
package gopool

import (
	"time"

	"github.com/panjf2000/ants/v2"
)

// idle is how long a goroutine waits for more work before it ends.
const idle = 5 * time.Second

var pool = func() *ants.Pool {
	p, err := ants.NewPool(-1,
		ants.WithExpiryDuration(idle),
		ants.WithPanicHandler(func(p any) { panic(p) }))
	if err != nil {
		panic(err) // only for options that are invalid, which these are not
	}
	return p
}()

// Go runs f on a pooled goroutine, or on a new one if the pool refuses it
// (it does only once closed, which this one never is).
func Go(f func()) {
	if pool.Submit(f) != nil {
		go f()
	}
}
