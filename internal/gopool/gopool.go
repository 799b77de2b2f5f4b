// Package gopool runs each request's handler on a goroutine kept from an
// earlier request.
//
// The deadline guard (graph's guardDeadline) runs a request's handler on a
// goroutine of its own, so that it can answer when the handler does not. A
// new goroutine starts with a small stack, and a handler soon needs a deep
// one (gqlgen's executor under the middleware), so the runtime copied its
// stack a few times as it grew, for every request. A goroutine kept from an
// earlier request has its grown stack already. Measured side by side at 50
// clients, the budget detail, overview, dashboard and anomalies pages cost
// 4 to 11 % less CPU a request with it.
//
// Only the handlers: there are as many as requests in flight, so the kept
// goroutines are few and each soon used again. Pooling the goroutines of
// every upstream call as well (a hundred for one overview) kept mostly idle
// goroutines whose stacks the collector had shrunk meanwhile, and cost the
// overview and the dashboard 3 to 4 % more CPU.
//
// The pool is github.com/panjf2000/ants: unbounded (the gateway bounds its
// requests in flight itself), the most recently idle goroutine first, and a
// goroutine idle for longer than a few seconds let go. A panic that escapes
// a function run here ends the process, as it would on a goroutine of its
// own: the guard recovers what its handler panics with.
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
