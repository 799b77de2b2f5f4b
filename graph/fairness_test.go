package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/upstream/sim"
)

// Tests of admission (graph/admission.go) through the real handler: one
// caller over its bound waits in line, before any of its work, while the
// others go on.

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
	body, _ := json.Marshal(map[string]any{"query": query})
	req := httptest.NewRequestWithContext(ctx, "POST", "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return timedQuery{time.Now(), decode(t, rec)}
}

// concurrently runs the functions, each delay after the one before, and
// waits for them all.
func concurrently(delay time.Duration, fns ...func()) {
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Go(fn)
		time.Sleep(delay)
	}
	wg.Wait()
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
	const latency = 300 * time.Millisecond
	e.sim.SetLatency(sim.Latency{Fixed: latency})
	ctx := context.Background()
	var first, second, other, keyless timedQuery
	concurrently(30*time.Millisecond,
		func() { first = e.timed(t, ctx, sim.DemoKey, slowQuery) },
		func() { second = e.timed(t, ctx, sim.DemoKey, slowQuery) },
		func() { other = e.timed(t, ctx, sim.OtherOrgKey, slowQuery) },
		func() { keyless = e.timed(t, ctx, "", "{ __typename }") },
	)
	for name, q := range map[string]timedQuery{"first": first, "second": second, "other": other, "keyless": keyless} {
		if len(q.r.Errors) > 0 {
			t.Errorf("%s: %s", name, q.r.raw)
		}
	}
	if second.end.Sub(first.end) < latency*3/4 {
		t.Errorf("the second request of the caller ended %v after the first: it did not wait for it", second.end.Sub(first.end))
	}
	if !other.end.Before(second.end) || !keyless.end.Before(first.end) {
		t.Errorf("another key or no key waited behind the busy caller: after the first request ended, the other key's "+
			"ended %v, no key's %v, the second's %v", other.end.Sub(first.end), keyless.end.Sub(first.end), second.end.Sub(first.end))
	}
}

// Keys the upstream has not accepted yet are one caller: a made-up key
// per request gets no more than one caller's share. Once a key has had an
// answer, it is a caller of its own.
func TestUnacceptedKeysAreOneCaller(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmission(1, 0))
	// Each upstream call says which key it carries and is held until
	// released: what went up while another call was held is what ran side by
	// side with it. (The test used to time the answers against a simulated
	// latency, which a loaded machine blurred.)
	arrived := make(chan string, 8)
	var release chan struct{}
	hold := func() {
		rel := make(chan struct{})
		t.Cleanup(func() { // a test that failed while calls were held lets them go
			select {
			case <-rel:
			default:
				close(rel)
			}
		})
		e.calls.mu.Lock()
		release = rel
		e.calls.fail = func(r *http.Request) *http.Response {
			arrived <- r.Header.Get("Authorization")
			<-rel
			return nil // then on to the simulator
		}
		e.calls.mu.Unlock()
	}
	next := func(what string) string {
		select {
		case k := <-arrived:
			return k
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no upstream call in 10s", what)
			return ""
		}
	}
	both := func(phase string) {
		var wg sync.WaitGroup
		for _, key := range []string{sim.DemoKey, sim.OtherOrgKey} {
			wg.Go(func() {
				if r := e.timed(t, context.Background(), key, slowQuery); len(r.r.Errors) > 0 {
					t.Errorf("%s: %s", phase, r.r.raw)
				}
			})
			if key == sim.DemoKey {
				next(phase + ", the first request") // it holds its place from now on
			}
		}
		switch phase {
		case "keys not yet accepted":
			select {
			case k := <-arrived:
				t.Errorf("%s: the second key's call (%s) went up while the first held the caller's place", phase, k)
			case <-time.After(300 * time.Millisecond): // waiting, as wanted (a slow machine can only hide a fault here)
			}
			close(release)
			next(phase + ", the second request once the first was answered")
		default:
			next(phase + ", the second request beside the first")
			close(release)
		}
		wg.Wait()
	}
	hold()
	both("keys not yet accepted")
	hold()
	both("keys accepted")
}

// A request that waits in line past its deadline is answered at the
// deadline, 504 REQUEST_TIMEOUT, and nothing of it has run.
func TestWaitingRequestAnswersAtItsDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withAdmission(1, 0))
	e.mustQuery(t, sim.DemoKey, slowQuery, nil, nil)
	e.calls.take()
	e.sim.SetLatency(sim.Latency{Fixed: 2 * time.Second})
	var busy timedQuery
	var waited timedQuery
	var took time.Duration
	concurrently(50*time.Millisecond,
		func() { busy = e.timed(t, context.Background(), sim.DemoKey, slowQuery) },
		func() {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			body, _ := json.Marshal(map[string]any{"query": slowQuery})
			req := httptest.NewRequestWithContext(ctx, "POST", "/graphql", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+sim.DemoKey)
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			took = time.Since(start)
			waited = timedQuery{time.Now(), decode(t, rec)}
			if calls := e.calls.take(); len(calls) != 1 {
				t.Errorf("upstream calls while the second request waited: %v, want the first's only", calls)
			}
		},
	)
	if waited.r.status != 504 || waited.r.code(t) != string(codes.RequestTimeout) {
		t.Errorf("the waiting request: %d %s", waited.r.status, waited.r.raw)
	}
	if took < 150*time.Millisecond || took > time.Second {
		t.Errorf("the waiting request was answered after %v, want at its deadline of 200ms", took)
	}
	if len(busy.r.Errors) > 0 {
		t.Errorf("the request in flight: %s", busy.r.raw)
	}
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
	e.sim.SetLatency(sim.Latency{Fixed: time.Second})
	body := bytes.Repeat([]byte(" "), int(graph.DefaultMaxBodyBytes)-64)
	copy(body, `{"query": "{ __typename }"}`)
	post := func(key string) int {
		req := httptest.NewRequest("POST", "/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code == http.StatusTooManyRequests {
			if r := decode(t, rec); r.code(t) != string(codes.RateLimited) || rec.Header().Get("Retry-After") == "" {
				t.Errorf("a refused body: %s %v", r.raw, rec.Header())
			}
		}
		return rec.Code
	}
	var busy timedQuery
	held := int(graph.MaxCallerBodyBytes / int64(len(body)))
	var mu sync.Mutex
	statuses := map[int]int{}
	concurrently(100*time.Millisecond,
		func() { busy = e.timed(t, context.Background(), sim.DemoKey, slowQuery) }, // holds the one place
		func() {
			var wg sync.WaitGroup
			for i := range held + 8 {
				wg.Go(func() {
					s := post(fmt.Sprintf("made-up-key-%d", i))
					mu.Lock()
					statuses[s]++
					mu.Unlock()
				})
			}
			wg.Wait()
		},
		func() {
			// Another caller's large body is still read, and waits its turn.
			if s := post(sim.OtherOrgKey); s == http.StatusTooManyRequests {
				t.Error("another caller's body was refused")
			}
		},
	)
	// Bodies arriving together are counted as they arrive, so more than
	// 8 may be refused part way; never fewer.
	if statuses[http.StatusTooManyRequests] < 8 {
		t.Errorf("answers to %d bodies of %d KiB from made-up keys: %v, want 8 or more refused 429 past the bound of %d MiB",
			held+8, len(body)>>10, statuses, graph.MaxCallerBodyBytes>>20)
	}
	if len(busy.r.Errors) > 0 {
		t.Errorf("the request in flight: %s", busy.r.raw)
	}
}

// firstRead calls done when it is first read.
type firstRead struct {
	r    io.Reader
	once sync.Once
	done func()
}

func (f *firstRead) Read(p []byte) (int, error) {
	f.once.Do(f.done)
	return f.r.Read(p)
}

// waitGroup waits for wg, failing after 10 s.
func waitGroup(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("waited 10s for %s", what)
	}
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
		req := httptest.NewRequest("POST", "/graphql", &firstRead{r: pr, done: reading.Done})
		req.ContentLength = graph.DefaultMaxBodyBytes
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", fmt.Sprintf("Bearer made-up-key-%d", i))
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
