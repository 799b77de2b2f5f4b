package sim

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// fault is the kind of injected failure chosen for one request.
type fault int

const (
	noFault fault = iota
	fault500
	fault503
	fault429
	faultDropBefore
	faultDropAfter
)

// plan is what the control decided for one request on arrival.
type plan struct {
	delay      time.Duration
	fault      fault
	retryAfter string // whole seconds, for 429 and 503
}

// control holds the injected latency and faults and the seeded generator they
// draw from. The generator is separate from the data generators so that
// turning faults on never changes the data.
type control struct {
	mu      sync.Mutex
	latency Latency
	faults  Faults
	ops     map[string]bool // nil means every operation
	rng     *rand.Rand
}

func (c *control) init(seed uint64) {
	c.rng = rand.New(rand.NewPCG(seed, 0x6661756c7473)) // stream "faults"
}

func (c *control) setLatency(l Latency) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latency = l
}

func (c *control) setFaults(f Faults) {
	var ops map[string]bool
	if len(f.Ops) > 0 {
		ops = make(map[string]bool, len(f.Ops))
		for _, op := range f.Ops {
			ops[op] = true
		}
	}
	f.Ops = append([]string(nil), f.Ops...) // the caller keeps its slice
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = f
	c.ops = ops
}

// plan draws the delay and the fault for a request of operation op ("" when
// the request matches no operation). Draws happen only for non-zero settings,
// so the sequence is reproducible for a given configuration and order of
// requests.
func (c *control) plan(op string) plan {
	c.mu.Lock()
	defer c.mu.Unlock()
	var p plan
	l := c.latency
	if l.Fixed > 0 {
		p.delay = l.Fixed
	}
	if l.Jitter > 0 {
		p.delay += time.Duration(c.rng.Int64N(int64(l.Jitter)))
	}
	if rate := clampRate(l.SpikeRate); rate > 0 && l.Spike > 0 && c.rng.Float64() < rate {
		p.delay += l.Spike
	}
	f := c.faults
	if c.ops != nil && !c.ops[op] {
		return p
	}
	rates := [...]float64{
		clampRate(f.Error500), clampRate(f.Error503), clampRate(f.RateLimit429),
		clampRate(f.DropBefore), clampRate(f.DropAfter),
	}
	sum := 0.0
	for _, r := range rates {
		sum += r
	}
	if sum == 0 {
		return p
	}
	x := c.rng.Float64()
	acc := 0.0
	for i, r := range rates {
		acc += r
		if r > 0 && x < acc {
			p.fault = fault(i + 1)
			break
		}
	}
	p.retryAfter = retryAfterSeconds(f.RetryAfter)
	return p
}

// clampRate maps a rate into [0,1]; NaN counts as 0.
func clampRate(r float64) float64 {
	if !(r > 0) {
		return 0
	}
	if r > 1 {
		return 1
	}
	return r
}

// retryAfterSeconds renders d as whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) string {
	secs := int64(d / time.Second)
	if d%time.Second != 0 {
		secs++
	}
	if secs < 1 {
		secs = 1
	}
	return strconv.FormatInt(secs, 10)
}
