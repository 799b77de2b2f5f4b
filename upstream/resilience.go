package upstream

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
)

// codeCircuitOpen is the code of a call refused because a circuit breaker
// is open: the upstream failed too often of late, and is left alone a while.
const codeCircuitOpen = "circuit_open"

// BreakerSettings tune the circuit breakers.
//
// There are two levels, so that no caller's requests alone can stop calls
// for the others. Each caller (each bearer key, known only by a keyed hash
// of it) has a breaker of its own, which trips on its own failures. The
// upstream host has one more, which trips on the failures of all callers
// together, but only once at least MinCallers distinct callers have seen
// failures within the Window: failures from one caller (or from fewer than
// MinCallers) can say something about that caller's requests, not that the
// upstream is down for everybody. See docs/resilience.md.
type BreakerSettings struct {
	// MinRequests is how many attempts the window must hold before the
	// failure ratio counts, so a few early failures do not trip it.
	MinRequests uint32
	// FailureRatio trips a breaker: failed attempts (no answer, 5xx) over all.
	FailureRatio float64
	// Window is the rolling period over which attempts are counted.
	Window time.Duration
	// OpenFor is how long a breaker refuses calls before letting one probe through.
	OpenFor time.Duration
	// MinCallers is how many distinct callers must have failed within the
	// Window before the host-wide breaker may trip (0: DefaultMinCallers).
	MinCallers int
	// MaxCallers bounds the per-caller breakers kept; the least recently used
	// one is forgotten to make room (0: DefaultMaxCallers).
	MaxCallers int
}

// DefaultMinCallers is how many distinct callers must fail before the
// host-wide breaker may trip, unless BreakerSettings say otherwise.
const DefaultMinCallers = 3

// DefaultMaxCallers is how many per-caller breakers a client keeps, unless
// BreakerSettings say otherwise: a few hundred kilobytes at most.
const DefaultMaxCallers = 4096

// DefaultBreakerSettings trip when at least half of 20 or more attempts in
// 10 s failed, and probe again after 5 s; the host-wide breaker also needs
// failures from 3 callers. A failure rate such as 15 % never trips them:
// retries handle that.
var DefaultBreakerSettings = BreakerSettings{MinRequests: 20, FailureRatio: 0.5, Window: 10 * time.Second, OpenFor: 5 * time.Second,
	MinCallers: DefaultMinCallers, MaxCallers: DefaultMaxCallers}

// WithCircuitBreaker sets the circuit breakers (DefaultBreakerSettings
// otherwise). A zero FailureRatio turns them off.
func WithCircuitBreaker(s BreakerSettings) Option {
	return func(c *Client) error {
		if s.MinCallers < 0 || s.MaxCallers < 0 {
			return fmt.Errorf("upstream: MinCallers and MaxCallers must not be negative: %+v", s)
		}
		c.breakers = newBreakers(c.base.Host, s)
		return nil
	}
}

// errExcluded marks an attempt that says nothing about the upstream (its
// caller went away, or the other breaker refused it) to a breaker.
var errExcluded = errors.New("excluded")

// errFailed marks a failed attempt to a breaker.
var errFailed = errors.New("failed")

type breaker = gobreaker.TwoStepCircuitBreaker[struct{}]

// breakers are the per-caller breakers and the host-wide one.
type breakers struct {
	settings BreakerSettings
	host     *breaker
	failing  recentCallers // the latest distinct callers that failed

	mu      sync.Mutex
	callers map[uint64]int // caller hash → index in slots
	slots   []callerSlot
	hand    int // clock hand for eviction
}

// callerSlot holds one caller's breaker. used is the clock algorithm's
// reference bit: a slot used since the hand last passed is spared once.
type callerSlot struct {
	caller uint64
	cb     *breaker
	used   bool
}

func newBreakers(host string, s BreakerSettings) *breakers {
	if s.FailureRatio <= 0 {
		return nil
	}
	if s.MinCallers == 0 {
		s.MinCallers = DefaultMinCallers
	}
	if s.MaxCallers == 0 {
		s.MaxCallers = DefaultMaxCallers
	}
	b := &breakers{settings: s, callers: map[uint64]int{}, failing: newRecentCallers(s.MinCallers)}
	b.host = newBreaker(host, s, func() bool {
		return b.failing.count(time.Now(), s.Window) >= s.MinCallers
	})
	return b
}

// newBreaker returns a breaker of the settings. spread, when not nil, must
// also hold for it to trip.
func newBreaker(name string, s BreakerSettings, spread func() bool) *breaker {
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         name,
		MaxRequests:  1,
		Interval:     s.Window,
		BucketPeriod: s.Window / 10,
		Timeout:      s.OpenFor,
		ReadyToTrip: func(n gobreaker.Counts) bool {
			return n.Requests >= s.MinRequests && float64(n.TotalFailures) >= s.FailureRatio*float64(n.Requests) &&
				(spread == nil || spread())
		},
		IsSuccessful: func(err error) bool { return err == nil },
		IsExcluded:   func(err error) bool { return err == errExcluded },
	})
}

// caller returns the breaker of the caller with key hash h.
func (b *breakers) caller(h uint64) *breaker {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i, ok := b.callers[h]; ok {
		b.slots[i].used = true
		return b.slots[i].cb
	}
	cb := newBreaker("caller", b.settings, nil)
	if len(b.slots) < b.settings.MaxCallers {
		b.callers[h] = len(b.slots)
		b.slots = append(b.slots, callerSlot{caller: h, cb: cb, used: true})
		return cb
	}
	for {
		s := &b.slots[b.hand]
		if s.used {
			s.used = false
			b.hand = (b.hand + 1) % len(b.slots)
			continue
		}
		delete(b.callers, s.caller)
		*s = callerSlot{caller: h, cb: cb, used: true}
		b.callers[h] = b.hand
		b.hand = (b.hand + 1) % len(b.slots)
		return cb
	}
}

// allow asks the caller's breaker and then the host's whether an attempt
// may be sent. It returns the func that reports the attempt's verdict
// (nil: success, errFailed, errExcluded) to both, or the *Error of the
// refusal.
func (b *breakers) allow(op string, h uint64) (func(verdict error), error) {
	cb := b.caller(h)
	doneCaller, err := cb.Allow()
	if err != nil {
		return nil, &Error{Op: op, Code: codeCircuitOpen,
			Message: "calls with this API key failed too often of late; they are paused"}
	}
	doneHost, err := b.host.Allow()
	if err != nil {
		doneCaller(errExcluded)
		return nil, &Error{Op: op, Code: codeCircuitOpen,
			Message: "the upstream failed too often of late; calls are paused"}
	}
	return func(verdict error) {
		if verdict == errFailed {
			// Recorded before the host's breaker counts the failure, so
			// its ReadyToTrip sees this caller among the failing ones.
			b.failing.add(h, time.Now())
		}
		doneCaller(verdict)
		doneHost(verdict)
	}, nil
}

// recentCallers remembers the latest distinct callers that failed, as many
// as it needs to tell whether enough of them did within a window: keeping
// the n most recent ones is enough, since n distinct callers failed within
// the window exactly when the least recent of those n did.
type recentCallers struct {
	mu     sync.Mutex
	caller []uint64
	at     []time.Time
}

func newRecentCallers(n int) recentCallers {
	return recentCallers{caller: make([]uint64, n), at: make([]time.Time, n)}
}

// add records a failure of caller h at now.
func (r *recentCallers) add(h uint64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	oldest := 0
	for i := range r.caller {
		if r.caller[i] == h && !r.at[i].IsZero() {
			r.at[i] = now
			return
		}
		if r.at[i].Before(r.at[oldest]) {
			oldest = i
		}
	}
	r.caller[oldest], r.at[oldest] = h, now
}

// count returns how many distinct callers it holds that failed within window of now.
func (r *recentCallers) count(now time.Time, window time.Duration) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, at := range r.at {
		if !at.IsZero() && now.Sub(at) <= window {
			n++
		}
	}
	return n
}

// RetryQuota bounds retries to a share of first attempts, so a failing
// upstream gets at most that much extra load, plus a small steady allowance
// so that a quiet client can still retry.
type RetryQuota struct {
	Ratio     float64 // retries allowed per first attempt
	PerSecond float64 // retries allowed per second regardless of traffic
	Burst     float64 // most unused allowance kept
}

// DefaultRetryQuota allows retries worth 20 % of the traffic plus 10 a
// second, kept up to 100.
var DefaultRetryQuota = RetryQuota{Ratio: 0.2, PerSecond: 10, Burst: 100}

// WithRetryQuota sets the retry quota (DefaultRetryQuota otherwise).
func WithRetryQuota(b RetryQuota) Option {
	return func(c *Client) error {
		if b.Ratio < 0 || b.PerSecond < 0 || b.Burst < 0 {
			return fmt.Errorf("upstream: retry quota must not be negative: %+v", b)
		}
		c.retryQuota = newRetryQuota(b)
		return nil
	}
}

// retryQuota is a token bucket: first attempts deposit Ratio, time deposits
// PerSecond, a retry withdraws one.
type retryQuota struct {
	cfg    RetryQuota
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newRetryQuota(b RetryQuota) *retryQuota {
	return &retryQuota{cfg: b, tokens: b.Burst, last: time.Now()}
}

func (q *retryQuota) refill(now time.Time, add float64) {
	q.tokens += add + now.Sub(q.last).Seconds()*q.cfg.PerSecond
	q.last = now
	if q.tokens > q.cfg.Burst {
		q.tokens = q.cfg.Burst
	}
}

// deposit records a first attempt.
func (q *retryQuota) deposit() {
	q.mu.Lock()
	q.refill(time.Now(), q.cfg.Ratio)
	q.mu.Unlock()
}

// withdraw reports whether a retry may be sent, and takes its token.
func (q *retryQuota) withdraw() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refill(time.Now(), 0)
	if q.tokens < 1 {
		return false
	}
	q.tokens--
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

// BreakersOpen is how many circuit breakers refuse calls now: the host's
// and the callers'. It is meant for a metrics gauge.
func (c *Client) BreakersOpen() int {
	if c.breakers == nil {
		return 0
	}
	return c.breakers.open()
}

func (b *breakers) open() int {
	n := 0
	if b.host.State() == gobreaker.StateOpen {
		n++
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.slots {
		if s.cb.State() == gobreaker.StateOpen {
			n++
		}
	}
	return n
}
