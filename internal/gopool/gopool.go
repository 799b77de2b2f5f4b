// Package gopool runs the gateway's short-lived work on goroutines that are
// kept for the next piece of work.
//
// A request's work runs on goroutines the request starts: the handler under
// its deadline guard, the concurrent fields of an object, the calls of a
// loader's batch. A new goroutine starts with a small stack, and each of
// these soon needs a deep one (net/http, the executor, a JSON decoder), so
// the runtime copies its stack a few times as it grows: at 50 clients on the
// budget detail page, 8 % of the gateway's CPU went to copying stacks. A
// goroutine kept from an earlier piece of work has its grown stack already.
//
// The pool is github.com/panjf2000/ants: unbounded (the gateway bounds its
// work in flight elsewhere, by request and by call), the most recently idle
// goroutine first, and a goroutine idle for longer than a few seconds let
// go. A panic that escapes a function run here ends the process, as it
// would on a goroutine of its own: the functions recover what they expect.
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
