package graph_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/upstream/sim"
)

// Tests of admission (graph/admission.go) through the real handler: the
// operations over -requests-in-flight wait for a place, and one caller over
// its bound waits in line, before any of its work, while the others go on.

func withAdmission(perCaller, total int) envOption {
	return func(c *envConfig) { c.graph.CallerInFlight, c.graph.InFlight = perCaller, total }
}

// timedQuery sends query with key (none if empty) under ctx and records
// when it was answered and what.
type timedQuery struct {
	end time.Time
	r   response
}

func (e *env) timed(t *testing.T, ctx context.Context, key, query string) timedQuery {
	t.Helper()
	r := e.queryRequest(t, ctx, "", key, query, nil)
	return timedQuery{time.Now(), r}
}

// heldCalls holds the gateway's upstream calls until released, and says
// which key each carries as it arrives: what went up while another call was
// held is what ran side by side with it. (The tests of this file used to
// time answers against a simulated latency, which a loaded machine blurred.)
type heldCalls struct {
	arrived chan string // the Authorization header of each call
	rel     chan struct{}
	once    sync.Once
}

// holdCalls makes e hold its upstream calls that match (all, if match is
// nil); a test that ends while calls are held lets them go.
func (e *env) holdCalls(t *testing.T, match func(*http.Request) bool) *heldCalls {
	h := &heldCalls{arrived: make(chan string, 256), rel: make(chan struct{})}
	t.Cleanup(h.release)
	e.calls.mu.Lock()
	defer e.calls.mu.Unlock()
	e.calls.fail = func(r *http.Request) *http.Response {
		if match == nil || match(r) {
			h.arrived <- r.Header.Get("Authorization")
			<-h.rel
		}
		return nil // then on to the simulator
	}
	return h
}

// release lets the held calls, and the later ones, go.
func (h *heldCalls) release() { h.once.Do(func() { close(h.rel) }) }

// next returns the key of the next call to arrive, failing after 10 s.
func (h *heldCalls) next(t *testing.T, what string) string {
	t.Helper()
	select {
	case k := <-h.arrived:
		return k
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no upstream call in 10s", what)
		return ""
	}
}

// none fails if a call has arrived that next has not returned.
func (h *heldCalls) none(t *testing.T, what string) {
	t.Helper()
	select {
	case k := <-h.arrived:
		t.Errorf("%s (%s)", what, k)
	default:
	}
}

// answers collects the names of requests as they are answered.
type answers chan string

// next returns the name of the next request answered, failing after 10 s.
func (a answers) next(t *testing.T, what string) string {
	t.Helper()
	select {
	case name := <-a:
		return name
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer in 10s", what)
		return ""
	}
}

const slowQuery = `{ budgets(first: 1) { nodes { id } } }`

// A caller with its one request in flight waits for it to end; another
// key and a request without a key are answered meanwhile.
func TestCallerOverItsBoundWaits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmission(1, 0))
	// Each key once, so that the upstream has accepted it.
	e.mustQuery(t, sim.DemoKey, slowQuery, nil, nil)
	e.mustQuery(t, sim.OtherOrgKey, slowQuery, nil, nil)
	held := e.holdCalls(t, func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+sim.DemoKey })
	answered := make(answers, 4)
	var wg sync.WaitGroup
	send := func(name, key, query string) {
		wg.Go(func() {
			if q := e.timed(t, context.Background(), key, query); len(q.r.Errors) > 0 {
				t.Errorf("%s: %s", name, q.r.raw)
			}
			answered <- name
		})
	}
	send("first", sim.DemoKey, slowQuery)
	held.next(t, "the first request") // it holds the caller's place from now on
	send("second", sim.DemoKey, slowQuery)
	send("other", sim.OtherOrgKey, slowQuery)
	send("keyless", "", "{ __typename }")
	for range 2 {
		if name := answered.next(t, "another key or no key"); name != "other" && name != "keyless" {
			t.Errorf("the %s request was answered while the caller's first was in flight", name)
		}
	}
	// A slow machine can only hide a fault here: the second request may not
	// have come to its turn yet.
	held.none(t, "the caller's second request went up while its first was in flight")
	held.release()
	held.next(t, "the second request once the first was answered")
	wg.Wait()
}

// Keys the upstream has not accepted yet are one caller: a made-up key
// per request gets no more than one caller's share. Once a key has had an
// answer, it is a caller of its own.
func TestUnacceptedKeysAreOneCaller(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmission(1, 0))
	var held *heldCalls
	both := func(phase string) {
		var wg sync.WaitGroup
		for _, key := range []string{sim.DemoKey, sim.OtherOrgKey} {
			wg.Go(func() {
				if r := e.timed(t, context.Background(), key, slowQuery); len(r.r.Errors) > 0 {
					t.Errorf("%s: %s", phase, r.r.raw)
				}
			})
			if key == sim.DemoKey {
				held.next(t, phase+", the first request") // it holds its place from now on
			}
		}
		switch phase {
		case "keys not yet accepted":
			select {
			case k := <-held.arrived:
				t.Errorf("%s: the second key's call (%s) went up while the first held the caller's place", phase, k)
			case <-time.After(300 * time.Millisecond): // waiting, as wanted (a slow machine can only hide a fault here)
			}
			held.release()
			held.next(t, phase+", the second request once the first was answered")
		default:
			held.next(t, phase+", the second request beside the first")
			held.release()
		}
		wg.Wait()
	}
	held = e.holdCalls(t, nil)
	both("keys not yet accepted")
	held = e.holdCalls(t, nil)
	both("keys accepted")
}

// A request that waits in line past its deadline is answered at the
// deadline, 504 REQUEST_TIMEOUT, and nothing of it has run.
func TestWaitingRequestAnswersAtItsDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmission(1, 0))
	e.mustQuery(t, sim.DemoKey, slowQuery, nil, nil)
	e.calls.take()
	held := e.holdCalls(t, nil)
	busy := make(chan timedQuery, 1)
	go func() { busy <- e.timed(t, context.Background(), sim.DemoKey, slowQuery) }()
	held.next(t, "the request in flight")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	waited := e.timed(t, ctx, sim.DemoKey, slowQuery)
	took := time.Since(start)
	if calls := e.calls.take(); len(calls) != 1 {
		t.Errorf("upstream calls while the second request waited: %v, want the first's only", calls)
	}
	if waited.r.status != 504 || waited.r.code(t) != string(codes.RequestTimeout) {
		t.Errorf("the waiting request: %d %s", waited.r.status, waited.r.raw)
	}
	// On the real clock: the simulator is served over TCP, which a
	// synctest bubble cannot hold.
	if took < 150*time.Millisecond || took > time.Second {
		t.Errorf("the waiting request was answered after %v, want at its deadline of 200ms", took)
	}
	held.release()
	if b := <-busy; len(b.r.Errors) > 0 {
		t.Errorf("the request in flight: %s", b.r.raw)
	}
}

// TestOperationsInFlightAreBoundedNotRefused: with -requests-in-flight 2,
// eight concurrent requests each get their answer, and no more than two
// operations are ever executing (their upstream calls in flight) at once.
func TestOperationsInFlightAreBoundedNotRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmission(0, 2))
	var now, peak atomic.Int32
	e.calls.fail = func(*http.Request) *http.Response {
		n := now.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		// How long a call lasts, so that operations over the bound would
		// overlap: a latency, not a wait for something to happen. (The
		// simulator's SetLatency would do, but its calls end after the
		// hook returns, out of this count.)
		time.Sleep(20 * time.Millisecond)
		now.Add(-1)
		return nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			e.mustQuery(t, "demo-key", `{ budgets(first: 3) { nodes { name } } }`, nil, nil)
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 2 || p < 1 {
		t.Errorf("at most %d upstream calls in flight, want 1 or 2 (one per operation, two operations)", p)
	}
}

// TestQueuedOperationEndsWithItsRequest: an operation waiting for a slot
// whose request ends gets REQUEST_TIMEOUT (504), and the slot it never had
// is not taken from the next one.
func TestQueuedOperationEndsWithItsRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmission(0, 1))
	hold := make(chan struct{})
	var once sync.Once
	started := make(chan struct{})
	e.calls.fail = func(*http.Request) *http.Response {
		once.Do(func() { close(started); <-hold })
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.mustQuery(t, "demo-key", `{ budgets(first: 1) { nodes { name } } }`, nil, nil)
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if r := e.timed(t, ctx, "demo-key", `{ budgets(first: 1) { nodes { name } } }`).r; r.status != http.StatusGatewayTimeout || r.code(t) != "REQUEST_TIMEOUT" {
		t.Errorf("queued request that ended: %d %s, want 504 REQUEST_TIMEOUT", r.status, r.raw)
	}
	close(hold)
	<-done
	e.mustQuery(t, "demo-key", `{ budgets(first: 1) { nodes { name } } }`, nil, nil)
}

// withPacing sets -caller-refusals.
func withPacing(refusals int) envOption {
	return func(c *envConfig) { c.graph.CallerRefusals = refusals }
}

// Only answers without data are refusals for pacing: a caller whose every
// answer has data and an error on one field (an invalid argument, a scope
// its key lacks) is never paced, however many it sends; one whose answers
// are errors alone is paced past its allowance, and its request then waits
// past its deadline.
func TestPacingCountsOnlyAnswersWithoutData(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withPacing(1)) // 2 refusals at once, then one a second
	e.mustQuery(t, sim.DemoKey, slowQuery, nil, nil)
	send := func(query string, timeout time.Duration) response {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return e.timed(t, ctx, sim.DemoKey, query).r
	}
	// The partial answers make an upstream call each, which under -race on
	// a busy machine can take longer than the refusals' short deadline.
	const partial = `{ budgets(first: 1) { nodes { name } } budget(id: "not-an-id") { name } }`
	for i := range 10 {
		r := send(partial, 5*time.Second)
		if r.status != 200 || len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "BAD_USER_INPUT" || !strings.Contains(string(r.Data), "budgets") {
			t.Fatalf("partial answer %d: %d %s", i, r.status, r.raw)
		}
	}
	const refused = `{ budget(id: "not-an-id") { name } }`
	var got []string
	for range 8 {
		r := send(refused, 300*time.Millisecond)
		got = append(got, fmt.Sprint(r.status, " ", r.Errors[0].Extensions["code"]))
		if r.status == 504 {
			break
		}
	}
	if n := len(got); n < 4 || got[n-1] != "504 REQUEST_TIMEOUT" {
		t.Errorf("answers without data in a row: %q, want three or more BAD_USER_INPUT, then 504 REQUEST_TIMEOUT", got)
	}
}

// The bodies of one caller's requests waiting for their turn are bounded
// (MaxCallerBodyBytes): past the bound, a request of that caller is refused
// at once, 429 RATE_LIMITED, unread, and another caller's is not. (Read
// before admission, 40 bodies of 512 KiB from made-up keys, one caller,
// waited in line holding 20 MiB; a thousand would hold 512 MiB.)
func TestWaitingBodiesOfACallerAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmission(0, 1))
	e.mustQuery(t, sim.DemoKey, slowQuery, nil, nil) // the keys are accepted
	e.mustQuery(t, sim.OtherOrgKey, slowQuery, nil, nil)
	body := bytes.Repeat([]byte(" "), int(graph.DefaultMaxBodyBytes)-64)
	copy(body, `{"query": "{ __typename }"}`)
	var wg sync.WaitGroup
	// post sends body with key, and gives its answer's status to status;
	// first is called when the body is first read, end when it is read to
	// its end.
	post := func(key string, status chan<- int, first, end func()) {
		req := postReader(&watchedRead{r: bytes.NewReader(body), first: first, end: end}, key)
		req.ContentLength = int64(len(body))
		wg.Go(func() {
			r := e.serve(t, req)
			if r.status == http.StatusTooManyRequests {
				if r.code(t) != string(codes.RateLimited) || r.header.Get("Retry-After") == "" {
					t.Errorf("a refused body: %s %v", r.raw, r.header)
				}
			}
			status <- r.status
		})
	}
	held := e.holdCalls(t, nil)
	busy := make(chan timedQuery, 1)
	go func() { busy <- e.timed(t, context.Background(), sim.DemoKey, slowQuery) }()
	held.next(t, "the request in flight") // it holds the one place

	// As many bodies as the bound holds, one after another, each read to
	// its end: then the 8 more are refused as their first bytes arrive.
	fit := int(graph.MaxCallerBodyBytes / int64(len(body)))
	statuses := make(chan int, fit+8)
	for i := range fit {
		read := make(chan struct{})
		post(fmt.Sprintf("made-up-key-%d", i), statuses, nil, func() { close(read) })
		waitClosed(t, read, fmt.Sprintf("body %d to be read", i))
	}
	var reading sync.WaitGroup
	reading.Add(8)
	for i := range 8 {
		post(fmt.Sprintf("made-up-key-%d", fit+i), statuses, reading.Done, nil)
	}
	waitGroup(t, &reading, "the bodies past the bound to be read")
	// Another caller's large body is still read, and waits its turn.
	other, otherRead := make(chan int, 1), make(chan struct{})
	post(sim.OtherOrgKey, other, nil, func() { close(otherRead) })
	waitClosed(t, otherRead, "another caller's body to be read")

	held.release()
	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for s := range statuses {
		got[s]++
	}
	if got[http.StatusTooManyRequests] != 8 || got[http.StatusOK] != fit {
		t.Errorf("answers to %d bodies of %d KiB from made-up keys: %v, want %d answered and 8 refused 429 past the bound of %d MiB",
			fit+8, len(body)>>10, got, fit, graph.MaxCallerBodyBytes>>20)
	}
	if s := <-other; s != http.StatusOK {
		t.Errorf("another caller's body was answered %d", s)
	}
	if b := <-busy; len(b.r.Errors) > 0 {
		t.Errorf("the request in flight: %s", b.r.raw)
	}
}

// watchedRead calls first, if not nil, when it is first read, and end, if
// not nil, when it is read to its end.
type watchedRead struct {
	r          io.Reader
	first, end func()
	once, eof  sync.Once
}

func (w *watchedRead) Read(p []byte) (int, error) {
	if w.first != nil {
		w.once.Do(w.first)
	}
	n, err := w.r.Read(p)
	if err == io.EOF && w.end != nil {
		w.eof.Do(w.end)
	}
	return n, err
}

// waitClosed waits for c to be closed, failing after 10 s.
func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("waited 10s for %s", what)
	}
}

// waitGroup waits for wg, failing after 10 s.
func waitGroup(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	waitClosed(t, done, what)
}

// What a caller's bodies hold is what arrived, not what Content-Length
// announced: connections that announce large bodies and send nothing hold
// nothing of their caller's bound. (Counted by Content-Length, 32 of them
// from made-up keys had every request of a key not yet accepted, a new
// organization's first, refused 429, unread.)
func TestAnnouncedBodiesHoldNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	idle := 40
	var wg, reading sync.WaitGroup
	reading.Add(idle)
	writers := make([]*io.PipeWriter, idle)
	for i := range idle {
		pr, pw := io.Pipe()
		writers[i] = pw
		req := postReader(&watchedRead{r: pr, first: reading.Done}, fmt.Sprintf("made-up-key-%d", i))
		req.ContentLength = graph.DefaultMaxBodyBytes
		wg.Go(func() { e.h.ServeHTTP(httptest.NewRecorder(), req) })
	}
	defer func() {
		for _, pw := range writers {
			pw.CloseWithError(io.ErrUnexpectedEOF)
		}
		wg.Wait()
	}()
	waitGroup(t, &reading, "the handlers to read their bodies")
	r := e.post(t, `{"query": "{ __typename }"}`, "Authorization", "Bearer a-new-organization")
	if r.status == http.StatusTooManyRequests {
		t.Errorf("a key not yet accepted, while %d connections announce bodies and send none: %d %s", idle, r.status, r.raw)
	}
}
