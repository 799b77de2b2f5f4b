// Package gopool runs work on goroutines kept from earlier requests, whose
// stacks have grown already to the depth of gqlgen's executor and of the JSON
// decoder: the executor's concurrent fields (executor.Object.Dispatch), and
// the first few upstream calls a request has in flight (graph/loaders'
// pooledCalls). A new goroutine starts with a small stack, which the runtime
// copies each time it grows. The pool is github.com/panjf2000/ants:
// unbounded (the gateway bounds its requests in flight itself), the most
// recently idle goroutine first, one idle for longer than idle let go. A
// panic that escapes a function run here ends the process, as it would on a
// goroutine of its own: each field and each loader's call recovers its own.
// docs/performance.md ("The goroutine pool") says what it saves, and why
// not every call runs here.
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
