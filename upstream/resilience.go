package upstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
)

// codeCircuitOpen is the code of a call refused because the circuit breaker
// is open: the upstream failed too often of late, and is left alone a while.
const codeCircuitOpen = "circuit_open"

// BreakerSettings tune the circuit breaker of the upstream host.
type BreakerSettings struct {
	// MinRequests is how many calls the window must hold before the failure
	// ratio counts, so a few early failures do not trip it.
	MinRequests uint32
	// FailureRatio trips the breaker: failed calls (no answer, 5xx) over all.
	FailureRatio float64
	// Window is the rolling period over which calls are counted.
	Window time.Duration
	// OpenFor is how long the breaker refuses calls before letting one probe through.
	OpenFor time.Duration
}

// DefaultBreakerSettings trip when at least half of 20 or more calls in 10 s
// failed, and probe again after 5 s. A failure rate such as 15 % never trips
// it: retries handle that.
var DefaultBreakerSettings = BreakerSettings{MinRequests: 20, FailureRatio: 0.5, Window: 10 * time.Second, OpenFor: 5 * time.Second}

// WithCircuitBreaker sets the circuit breaker of the upstream host
// (DefaultBreakerSettings otherwise). A zero FailureRatio turns it off.
func WithCircuitBreaker(s BreakerSettings) Option {
	return func(c *Client) error {
		c.breaker = newBreaker(c.base.Host, s)
		return nil
	}
}

func newBreaker(host string, s BreakerSettings) *gobreaker.CircuitBreaker[struct{}] {
	if s.FailureRatio <= 0 {
		return nil
	}
	return gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         host,
		MaxRequests:  1,
		Interval:     s.Window,
		BucketPeriod: s.Window / 10,
		Timeout:      s.OpenFor,
		ReadyToTrip: func(n gobreaker.Counts) bool {
			return n.Requests >= s.MinRequests && float64(n.TotalFailures) >= s.FailureRatio*float64(n.Requests)
		},
		// Only the upstream's own failures count: an answer, even a 4xx or a
		// 429, shows a working upstream.
		IsSuccessful: func(err error) bool {
			var e *Error
			return err == nil || (errors.As(err, &e) && e.Status != 0 && e.Status < 500)
		},
		// A caller that went away says nothing about the upstream.
		IsExcluded: func(err error) bool {
			return errors.Is(err, context.Canceled)
		},
	})
}

// RetryBudget bounds retries to a share of first attempts, so a failing
// upstream gets at most that much extra load, plus a small steady allowance
// so that a quiet client can still retry.
type RetryBudget struct {
	Ratio     float64 // retries allowed per first attempt
	PerSecond float64 // retries allowed per second regardless of traffic
	Burst     float64 // most unused allowance kept
}

// DefaultRetryBudget allows retries worth 20 % of the traffic plus 10 a
// second, kept up to 100.
var DefaultRetryBudget = RetryBudget{Ratio: 0.2, PerSecond: 10, Burst: 100}

// WithRetryBudget sets the retry budget (DefaultRetryBudget otherwise).
func WithRetryBudget(b RetryBudget) Option {
	return func(c *Client) error {
		if b.Ratio < 0 || b.PerSecond < 0 || b.Burst < 0 {
			return fmt.Errorf("upstream: retry budget must not be negative: %+v", b)
		}
		c.budget = newBudget(b)
		return nil
	}
}

// budget is a token bucket: first attempts deposit Ratio, time deposits
// PerSecond, a retry withdraws one.
type budget struct {
	cfg    RetryBudget
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newBudget(b RetryBudget) *budget { return &budget{cfg: b, tokens: b.Burst, last: time.Now()} }

func (b *budget) refill(now time.Time, add float64) {
	b.tokens += add + now.Sub(b.last).Seconds()*b.cfg.PerSecond
	b.last = now
	if b.tokens > b.cfg.Burst {
		b.tokens = b.cfg.Burst
	}
}

// deposit records a first attempt.
func (b *budget) deposit() {
	b.mu.Lock()
	b.refill(time.Now(), b.cfg.Ratio)
	b.mu.Unlock()
}

// withdraw reports whether a retry may be sent, and takes its token.
func (b *budget) withdraw() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(time.Now(), 0)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// DefaultMaxInFlight bounds the calls one Client has in flight at once.
const DefaultMaxInFlight = 256

// WithMaxInFlight bounds the calls in flight to the upstream at once, across
// every caller of the client (DefaultMaxInFlight otherwise; 0 means no bound).
// A call waits for a place, or until its context ends.
func WithMaxInFlight(n int) Option {
	return func(c *Client) error {
		if n < 0 {
			return fmt.Errorf("upstream: max in flight must not be negative, got %d", n)
		}
		c.inflight = nil
		if n > 0 {
			c.inflight = make(chan struct{}, n)
		}
		return nil
	}
}

// attempt makes one attempt through the in-flight bound and the breaker,
// and decodes a success answer into env.
func (c *Client) attempt(ctx context.Context, cl call, rawURL, key string, body []byte, env answerEnvelope) error {
	if c.inflight != nil {
		select {
		case c.inflight <- struct{}{}:
			defer func() { <-c.inflight }()
		case <-ctx.Done():
			return &Error{Op: cl.op, Code: codeNoResponse, Message: "gave up waiting for a free connection",
				Err: ctx.Err()}
		}
	}
	if c.breaker == nil {
		return c.send(ctx, cl, rawURL, key, body, env)
	}
	_, err := c.breaker.Execute(func() (struct{}, error) {
		return struct{}{}, c.send(ctx, cl, rawURL, key, body, env)
	})
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return &Error{Op: cl.op, Code: codeCircuitOpen,
			Message: "the upstream failed too often of late; calls are paused"}
	}
	return err
}
