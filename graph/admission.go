package graph

import (
	"context"
	"hash/maphash"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/costgw/gateway/graph/codes"
)

// Admission: one caller must not take the gateway from the others. Every
// request to the endpoint is admitted once its body has arrived (readFirst)
// and before any of its work starts, under two bounds held to the end of its
// answer, waiting on the upstream included: at most total requests in flight
// in all (-requests-in-flight) and perCaller for each caller
// (-caller-in-flight). A request over either waits in line, its caller's in
// order and the callers in turn, until its deadline (then 504
// REQUEST_TIMEOUT, nothing of it run). A caller refused often
// (Info.BlamesCaller) is paced (-caller-refusals): one of its requests
// admitted every 1/r seconds. A caller is a keyed hash of the bearer key;
// all requests without a key are one caller, and so are all keys the
// upstream has not been seen to accept (the last verifiedKeys accepted are
// remembered). docs/security.md ("Admission", "Pacing callers who are
// refused") says why each is so, and what was measured.

// verifiedKeys is how many accepted keys the gateway remembers.
const verifiedKeys = 1 << 14

// callerID identifies a caller: a hash of its key, or one of the groups.
type callerID uint64

const (
	callerKeyless callerID = iota
	callerUnverified
)

// admission is the gateway's admission control.
type admission struct {
	perCaller int // requests in flight per caller; 0: no bound
	total     int // places; 0: no bound
	refusals  int // refused requests a second per caller before pacing; 0: no pacing
	// onPaced, when not nil, is told of each caller that runs out of its
	// allowance of refusals, by kind (callerKind).
	onPaced func(kind string)

	seed maphash.Seed
	now  func() time.Time

	mu       sync.Mutex
	placed   int // requests holding a place
	callers  map[callerID]*callerLine
	turns    []*callerLine // callers with a request that may take a place, in turn
	verified *simplelru.LRU[callerID, struct{}]
	paces    *simplelru.LRU[callerID, *pace] // callers refused lately
	bodies   map[callerID]int64              // bytes of bodies each caller holds (holdBody)
}

// MaxCallerBodyBytes bounds the bytes of request bodies one caller holds in
// the gateway at once, from their arrival until they are decoded. A body is
// read before its request is admitted (readFirst), so a request waiting in
// line holds it: without a bound, a flood of large bodies from one caller
// (every request without a key, or made-up keys, which are one caller each)
// waiting for their turn would hold as much memory as it sent. Past the
// bound the read stops and the request is refused at once, 429
// RATE_LIMITED. What is counted is what arrived, not what Content-Length
// announced, so a connection that announces a body and sends none holds
// nothing of it (and a buffer of 16 KiB: the buffer grows as the body
// arrives, to at most four times what did). 16 MiB is 32 bodies at the default -max-body-bytes, or
// thousands of the few kilobytes real requests send, for one caller.
const MaxCallerBodyBytes = 16 << 20

// holdBody takes n bytes of id's bound on bodies (MaxCallerBodyBytes), and
// reports whether they were free; dropBody gives them back.
func (a *admission) holdBody(id callerID, n int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.bodies[id]+n > MaxCallerBodyBytes {
		return false
	}
	a.bodies[id] += n
	return true
}

func (a *admission) dropBody(id callerID, n int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.bodies[id] -= n; a.bodies[id] <= 0 {
		delete(a.bodies, id)
	}
}

// pace is the refusal allowance of a caller: a token bucket of refusals.
type pace struct {
	tokens float64   // refusals the caller may have now
	at     time.Time // when tokens was counted
	next   time.Time // when a paced caller's next request may be admitted
	// watched is set once the caller has been paced, until its allowance is
	// whole again: meanwhile each request in flight counts against the
	// allowance until it ends, so that a paced caller's line is not let in
	// all at once when the allowance comes back.
	watched bool
}

// spare is what is left of p's allowance for line's caller to take now;
// below 1, the caller is paced.
func (a *admission) spare(p *pace, line *callerLine) float64 {
	if !p.watched {
		return p.tokens
	}
	return p.tokens - float64(line.running)
}

// callerLine is one caller's requests.
type callerLine struct {
	id      callerID
	running int       // admitted, not yet ended
	waiting []*waiter // not yet admitted, in order
	inTurns bool
	wake    *time.Timer // set while a paced caller waits for its next turn
}

type waiter struct {
	ready chan struct{} // closed when admitted
}

func newAdmission(perCaller, total, refusals int) *admission {
	v, _ := simplelru.NewLRU[callerID, struct{}](verifiedKeys, nil)
	p, _ := simplelru.NewLRU[callerID, *pace](verifiedKeys+2, nil)
	return &admission{perCaller: perCaller, total: total, refusals: refusals, seed: maphash.MakeSeed(),
		now: time.Now, callers: map[callerID]*callerLine{}, verified: v, paces: p, bodies: map[callerID]int64{}}
}

// caller is the caller of a request: its key's own caller once the key is
// accepted, else the unverified keys; keyHash is the key's hash (0 without
// a key), for accepted.
func (a *admission) caller(r *http.Request) (id, keyHash callerID) {
	key, ok := BearerKey(r)
	if !ok {
		return callerKeyless, 0
	}
	h := callerID(maphash.String(a.seed, key))
	if h <= callerUnverified {
		h += 2 // clear of the groups' ids
	}
	a.mu.Lock()
	_, known := a.verified.Get(h)
	a.mu.Unlock()
	if known {
		return h, h
	}
	return callerUnverified, h
}

// accepted records that the upstream accepted the key of keyHash.
func (a *admission) accepted(keyHash callerID) {
	a.mu.Lock()
	a.verified.Add(keyHash, struct{}{})
	a.mu.Unlock()
}

func (a *admission) line(id callerID) *callerLine {
	line := a.callers[id]
	if line == nil {
		line = &callerLine{id: id}
		a.callers[id] = line
	}
	return line
}

func (a *admission) placeFree() bool { return a.total <= 0 || a.placed < a.total }

// acquire admits a request of the caller id, waiting while it is over a
// bound; nil when ctx ended first. An admitted request calls
// release with the line returned when it ends.
func (a *admission) acquire(ctx context.Context, id callerID) *callerLine {
	a.mu.Lock()
	line := a.line(id)
	if len(line.waiting) == 0 && a.callerFree(line) && a.placeFree() && a.due(line) {
		a.admit1(line)
		a.mu.Unlock()
		return line
	}
	w := &waiter{ready: make(chan struct{})}
	line.waiting = append(line.waiting, w)
	a.enterTurns(line)
	a.dispatch()
	a.mu.Unlock()
	select {
	case <-w.ready:
		return line
	case <-ctx.Done():
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-w.ready: // admitted as ctx ended: pass the place on
		line.running--
		a.vacate(line)
		return nil
	default:
	}
	line.waiting = remove(line.waiting, w)
	a.forget(line)
	return nil
}

// release ends an admitted request; refused says whether it was refused
// through its caller's fault (see above).
func (a *admission) release(line *callerLine, refused bool) {
	a.mu.Lock()
	paced := false
	if refused && a.refusals > 0 {
		p, ok := a.paces.Get(line.id)
		if !ok {
			p = &pace{tokens: a.burst(), at: a.now()}
			a.paces.Add(line.id, p)
		}
		a.refill(p, a.now())
		// The allowance goes into debt, to no more than a burst, so that a
		// flood stays paced until it has been paid off.
		before := p.tokens
		p.tokens = max(p.tokens-1, -a.burst())
		paced = before >= 1 && p.tokens < 1
	}
	line.running--
	a.vacate(line)
	a.mu.Unlock()
	if paced && a.onPaced != nil {
		a.onPaced(callerKind(line.id))
	}
}

// callerKind names the kind of a caller, never which: "keyless" (every
// request without a key), "unaccepted" (every key the upstream has not
// been seen to accept), or "key" (an accepted key).
func callerKind(id callerID) string {
	switch id {
	case callerKeyless:
		return "keyless"
	case callerUnverified:
		return "unaccepted"
	}
	return "key"
}

// burst is how many refusals a caller may have at once.
func (a *admission) burst() float64 { return 2 * float64(a.refusals) }

// refill brings p's allowance up to date at now.
func (a *admission) refill(p *pace, now time.Time) {
	p.tokens = min(a.burst(), p.tokens+now.Sub(p.at).Seconds()*float64(a.refusals))
	p.at = now
}

// due reports whether line's caller may have a request admitted now as far
// as its pace goes; when not, it sets the timer that puts the caller in
// turn again once it may.
func (a *admission) due(line *callerLine) bool {
	if a.refusals <= 0 {
		return true
	}
	p, ok := a.paces.Peek(line.id)
	if !ok {
		return true
	}
	now := a.now()
	a.refill(p, now)
	if p.watched && p.tokens >= a.burst() {
		p.watched = false
	}
	if a.spare(p, line) >= 1 {
		return true
	}
	p.watched = true
	if !now.Before(p.next) {
		return true
	}
	if line.wake == nil {
		line.wake = time.AfterFunc(p.next.Sub(now), func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			line.wake = nil
			a.enterTurns(line)
			a.dispatch()
			a.forget(line)
		})
	}
	return false
}

// admit1 admits the next request of line (which due let in); if its caller
// is paced, the one after it waits its turn.
func (a *admission) admit1(line *callerLine) {
	if a.refusals > 0 {
		if p, ok := a.paces.Peek(line.id); ok && a.spare(p, line) < 1 {
			p.next = a.now().Add(time.Second / time.Duration(a.refusals))
		}
	}
	line.running++
	a.placed++
}

// vacate frees the place of a request of line, and admits the next.
func (a *admission) vacate(line *callerLine) {
	a.placed--
	a.enterTurns(line)
	a.dispatch()
	a.forget(line)
}

// eligible reports whether line has a request waiting that its caller's
// bound and pace let in.
func (a *admission) eligible(line *callerLine) bool {
	return len(line.waiting) > 0 && a.callerFree(line) && a.due(line)
}

// callerFree reports whether line's caller may have one more request in
// flight.
func (a *admission) callerFree(line *callerLine) bool {
	return a.perCaller <= 0 || line.running < a.perCaller
}

// enterTurns puts a caller with a request that may be admitted in turn.
func (a *admission) enterTurns(line *callerLine) {
	if !line.inTurns && a.eligible(line) {
		line.inTurns = true
		a.turns = append(a.turns, line)
	}
}

// dispatch admits waiting requests while the total bound allows: the
// first of each caller in turn.
func (a *admission) dispatch() {
	for len(a.turns) > 0 && a.placeFree() {
		line := a.turns[0]
		a.turns = a.turns[1:]
		line.inTurns = false
		if !a.eligible(line) {
			a.forget(line)
			continue
		}
		w := line.waiting[0]
		line.waiting = line.waiting[1:]
		a.admit1(line)
		close(w.ready)
		a.enterTurns(line)
	}
	if len(a.turns) == 0 {
		a.turns = nil // let the backing array go
	}
}

// forget drops the line of a caller with nothing running, waiting or due
// to wake.
func (a *admission) forget(line *callerLine) {
	if line.running == 0 && len(line.waiting) == 0 && !line.inTurns && line.wake == nil {
		delete(a.callers, line.id)
	}
}

func remove(ws []*waiter, w *waiter) []*waiter {
	for i, x := range ws {
		if x == w {
			return append(ws[:i], ws[i+1:]...)
		}
	}
	return ws
}

// admit is the middleware of admission (see above).
func (a *admission) admit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if InfoFrom(ctx) == nil {
			ctx, _ = WithInfo(ctx)
		}
		id, keyHash := a.caller(r)
		line := a.acquire(ctx, id)
		if line == nil {
			refuseRequest(w, r.WithContext(ctx), http.StatusGatewayTimeout, codes.Errorf(codes.RequestTimeout,
				"the request waited for its turn past its deadline: its caller had too many requests in flight, or is paced for being refused too often"))
			return
		}
		refused := false
		defer func() { a.release(line, refused) }()
		next.ServeHTTP(w, r.WithContext(ctx))
		i := InfoFrom(ctx)
		if id == callerUnverified && i.UpstreamCalls() > 0 && i.Outcome() == "OK" {
			a.accepted(keyHash)
		}
		refused = a.refusals > 0 && i.BlamesCaller()
	})
}
