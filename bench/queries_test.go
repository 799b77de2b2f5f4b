package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
)

// testEnv is the gateway's handler and the direct client on an in-process
// simulator seeded as the bench seeds it.
type testEnv struct {
	sim     *sim.Server
	client  *upstream.Client
	handler http.Handler
	fx      fixture
	rt      *timingTransport
	bodies  map[string][]byte
}

// seededSim is an in-process simulator behind httptest, seeded as the
// bench seeds it: the simulator, its URL and the fixture of the seeding.
func seededSim(tb testing.TB) (*sim.Server, string, fixture) {
	tb.Helper()
	s := sim.New(sim.Options{})
	srv := httptest.NewServer(s)
	tb.Cleanup(srv.Close)
	fx, err := seed(context.Background(), srv.URL)
	if err != nil {
		tb.Fatal(err)
	}
	return s, srv.URL, fx
}

func newTestEnv(tb testing.TB) *testEnv {
	tb.Helper()
	s, url, fx := seededSim(tb)
	e := gatewayOn(tb, s, url)
	e.fx = fx
	for _, q := range queries {
		b, err := json.Marshal(map[string]any{"query": q.Gateway, "operationName": q.Name, "variables": q.Vars(fx)})
		if err != nil {
			tb.Fatal(err)
		}
		e.bodies[q.Name] = b
	}
	return e
}

// gatewayOn returns a test environment whose gateway handler calls the
// upstream at url, through a transport that times each call; s is the
// simulator behind it. It has no fixture and no query bodies.
func gatewayOn(tb testing.TB, s *sim.Server, url string) *testEnv {
	tb.Helper()
	rt := &timingTransport{next: upstream.NewTransport()}
	c, err := upstream.NewClient(url, upstream.WithHTTPClient(&http.Client{Transport: rt, Timeout: 10 * time.Second}))
	if err != nil {
		tb.Fatal(err)
	}
	return &testEnv{sim: s, client: c, rt: rt, bodies: map[string][]byte{},
		handler: graph.NewHandler(graph.Options{Client: c, CursorSecret: []byte("bench")})}
}

// serve runs q through the gateway's handler; the answer goes to rec.
func (e *testEnv) serve(q *query, rec *httptest.ResponseRecorder) {
	e.post(e.bodies[q.Name], rec)
}

// post sends body to the gateway's handler with the demo key; the answer
// goes to rec.
func (e *testEnv) post(body []byte, rec *httptest.ResponseRecorder) {
	req := httptest.NewRequest("POST", "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+sim.DemoKey)
	e.handler.ServeHTTP(rec, req)
}

// gateway runs q through the gateway and checks that the answer has records
// and no error.
func (e *testEnv) gateway(tb testing.TB, q *query) {
	tb.Helper()
	rec := httptest.NewRecorder()
	e.serve(q, rec)
	e.check(tb, q, rec.Code, rec.Body.Bytes())
}

// direct runs q with the direct client and checks its answer the same way.
func (e *testEnv) direct(tb testing.TB, q *query) {
	tb.Helper()
	v, err := q.Direct(upstream.WithAPIKey(context.Background(), sim.DemoKey), e.client, e.fx)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"data": v})
	if err != nil {
		tb.Fatal(err)
	}
	e.check(tb, q, 200, b)
}

// testServer is one way of serving a query in these tests: its name and
// the method that serves it.
type testServer struct {
	name string
	run  func(testing.TB, *query)
}

// servers are the gateway and the direct client, the two ways the tests
// serve every query.
func (e *testEnv) servers() []testServer {
	return []testServer{{nameGateway, e.gateway}, {nameDirect, e.direct}}
}

func (e *testEnv) check(tb testing.TB, q *query, status int, body []byte) {
	tb.Helper()
	var a gqlAnswer
	if err := json.Unmarshal(body, &a); err != nil || status != 200 || len(a.Errors) > 0 {
		tb.Fatalf("%s: status %d, answer %.500s", q.Name, status, body)
	}
	if n, err := q.Records(a.Data); err != nil || n == 0 {
		tb.Fatalf("%s: no records (%v): %.500s", q.Name, err, body)
	}
}

// timingTransport records when each upstream call started and ended.
type timingTransport struct {
	next  http.RoundTripper
	mu    sync.Mutex
	spans []span
}

type span struct {
	call       string
	start, end time.Time
}

func (t *timingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	t.mu.Lock()
	t.spans = append(t.spans, span{r.Method + " " + r.URL.Path, start, time.Now()})
	t.mu.Unlock()
	return resp, err
}

func (t *timingTransport) take() []span {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.spans
	t.spans = nil
	return out
}

// tiers is the longest chain of calls in which each started only after the
// one before it had ended: the round trips on the critical path.
func tiers(spans []span) int {
	slices.SortFunc(spans, func(a, b span) int { return a.start.Compare(b.start) })
	depth := make([]int, len(spans))
	most := 0
	for i := range spans {
		depth[i] = 1
		for j := range i {
			if !spans[j].end.After(spans[i].start) {
				depth[i] = max(depth[i], depth[j]+1)
			}
		}
		most = max(most, depth[i])
	}
	return most
}

// Every query makes exactly the hand-worked minimum of upstream calls, on
// the gateway and on the direct client: the minimum of each is explained by
// its Why in queries.go.
func TestQueriesMakeTheMinimumCalls(t *testing.T) {
	e := newTestEnv(t)
	for i := range queries {
		q := &queries[i]
		want := map[string]int64{}
		for op, n := range q.Min {
			want[op] = int64(n)
		}
		for _, c := range e.servers() {
			t.Run(q.Name+"/"+c.name, func(t *testing.T) {
				e.sim.ResetCounts()
				c.run(t, q)
				if diff := cmp.Diff(want, e.sim.Counts()); diff != "" {
					t.Errorf("upstream calls per operation (-minimum +made):\n%s", diff)
				}
				if got := e.sim.TotalCalls(); got != int64(q.minCalls()) {
					t.Errorf("%d upstream requests in all, want %d", got, q.minCalls())
				}
			})
		}
	}
}

// Every query costs exactly its hand-worked number of round trips: calls
// that do not depend on each other go out together. The simulator's latency
// is long enough that calls of one tier always overlap.
func TestQueriesTakeTheMinimumTiers(t *testing.T) {
	if testing.Short() {
		t.Skip("waits on injected latency")
	}
	e := newTestEnv(t)
	const latency = 60 * time.Millisecond
	e.sim.SetLatency(sim.Latency{Fixed: latency})
	for i := range queries {
		q := &queries[i]
		for _, c := range e.servers() {
			t.Run(q.Name+"/"+c.name, func(t *testing.T) {
				e.rt.take()
				c.run(t, q)
				spans := e.rt.take()
				if got := tiers(spans); got != q.Tiers {
					t.Errorf("%d tiers of calls, want %d", got, q.Tiers)
					for _, s := range spans {
						t.Logf("%s: %v – %v", s.call, s.start.Format("15:04:05.000"), s.end.Format("15:04:05.000"))
					}
				}
			})
		}
	}
}

// Every query has what the harness, the report and the tests need of it.
func TestEveryQueryIsComplete(t *testing.T) {
	for _, q := range queries {
		if q.Gateway == "" || q.Direct == nil || q.Records == nil || q.Tiers < 1 || len(q.Min) == 0 || q.Why == "" {
			t.Errorf("%s: incomplete definition", q.Name)
		}
		if q.Mesh != "" && q.MeshRecords == nil {
			t.Errorf("%s: a Mesh query needs MeshRecords", q.Name)
		}
	}
}

func TestTiers(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name  string
		spans []span
		want  int
	}{
		{"none", nil, 0},
		{"one", []span{{"a", at(0), at(10)}}, 1},
		{"overlapping", []span{{"a", at(0), at(10)}, {"b", at(2), at(12)}}, 1},
		{"chained", []span{{"a", at(0), at(10)}, {"b", at(11), at(20)}, {"c", at(11), at(21)}}, 2},
		{"three", []span{{"a", at(0), at(10)}, {"b", at(11), at(20)}, {"c", at(21), at(30)}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tiers(tc.spans); got != tc.want {
				t.Errorf("tiers = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"-smoke", "-queries", "Overview,Dashboard", "-concurrency", "1,8"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.smoke || c.duration >= 2*time.Second || len(c.selected()) != 2 || !slices.Equal(c.concurrency, []int{1, 8}) {
		t.Errorf("unexpected config: %+v", c)
	}
	for _, bad := range [][]string{{"-queries", "Nope"}, {"-concurrency", "0"}, {"-latencies", "soon"}, {"extra"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}

// Lists are marshalled one element at a time (gqlgen's worker_limit), so the
// gateway starts the upstream calls of a list's elements ahead, for the
// whole list at once: a list of nodes, or a page of budgets reached through
// edges, still costs one round trip per level, not one per element.
func TestListsOfNodesTakeOneTierPerLevel(t *testing.T) {
	if testing.Short() {
		t.Skip("waits on injected latency")
	}
	e := newTestEnv(t)
	pg := e.firstBudgets(t, 8)
	var budgets, rows []string
	for _, b := range pg.Data {
		budgets = append(budgets, relay.BudgetID(b.ID))
		rows = append(rows, relay.PlanningID(b.ID, b.Plannings[0].ID))
	}
	e.sim.SetLatency(sim.Latency{Fixed: 60 * time.Millisecond})
	for _, tc := range []struct {
		name, query string
		vars        map[string]any
		calls, want int
	}{
		{"budgets by id with actuals", `query($ids: [ID!]!) { nodes(ids: $ids) { ... on Budget { name actuals { total } } } }`,
			map[string]any{"ids": budgets}, 16, 1},
		{"planning rows of several budgets with actuals and budget",
			`query($ids: [ID!]!) { nodes(ids: $ids) { ... on Planning { dimension1 actuals { amount } budget { name } } } }`,
			map[string]any{"ids": rows}, 24, 1},
		{"a page through edges", `{ budgets(first: 8) { edges { node { metrics { variance } plannings { actuals { amount } } } } } }`,
			nil, 17, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, spans := e.timed(t, tc.query, tc.vars)
			if len(spans) != tc.calls {
				t.Errorf("%d upstream calls, want %d", len(spans), tc.calls)
			}
			if got := tiers(spans); got != tc.want {
				t.Errorf("%d tiers of calls, want %d", got, tc.want)
			}
		})
	}
}

// A budget whose reads no resolver started ahead (here the one a mutation
// made) resolves its loading fields side by side, so that their calls
// overlap: the executor runs them one after another only when every read
// they wait for is under way already (resolvers.ReadsStarted).
func TestFieldsOfABudgetNotPrefetchedOverlap(t *testing.T) {
	if testing.Short() {
		t.Skip("waits on injected latency")
	}
	e := newTestEnv(t)
	pg := e.firstBudgets(t, 1)
	e.sim.SetLatency(sim.Latency{Fixed: 60 * time.Millisecond})
	body, spans := e.timed(t,
		`mutation($in: CreateBudgetInput!) { createBudget(input: $in) { budget { metrics { variance } actuals { total } } userErrors { message } } }`,
		map[string]any{"in": map[string]any{"name": "Side by side", "startDate": "2026-01-01", "numberOfPeriods": 12,
			"explorerReportId": pg.Data[0].ExplorerReportID}})
	if bytes.Contains(body, []byte(`"message"`)) {
		t.Fatalf("a user error: %s", body)
	}
	if len(spans) != 3 {
		t.Errorf("%d upstream calls, want 3 (create, getBudget, getBudgetActuals)", len(spans))
	}
	if got := tiers(spans); got != 2 {
		t.Errorf("%d tiers of calls, want 2: the budget's two reads side by side after the create", got)
	}
}

// firstBudgets reads the first n budgets of the demo key's organization
// straight from the upstream, with no gateway between.
func (e *testEnv) firstBudgets(t *testing.T, n int) *upstream.Page[upstream.Budget] {
	t.Helper()
	pg, err := e.client.Budgets.List(upstream.WithAPIKey(context.Background(), sim.DemoKey), &upstream.ListOptions{Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	return pg
}

// timed runs query through the gateway with the demo key, fails the test on
// an answer with errors, and returns the answer with the upstream calls it
// made.
func (e *testEnv) timed(t *testing.T, query string, vars map[string]any) ([]byte, []span) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	e.rt.take()
	rec := httptest.NewRecorder()
	e.post(body, rec)
	var a gqlAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || len(a.Errors) > 0 {
		t.Fatalf("answer: %s", rec.Body)
	}
	return rec.Body.Bytes(), e.rt.take()
}

// A page whose records carry planning rows that name another budget (an
// upstream that contradicts itself) keeps its tiers: the rows' reads are
// that budget's, which nothing started, so the budget's fields stay side by
// side. When the budget's own reads alone were checked, its metrics ran
// before its rows' actuals were even asked for: 3 tiers.
func TestRowsOfAnotherBudgetKeepTheirTiers(t *testing.T) {
	if testing.Short() {
		t.Skip("waits on injected latency")
	}
	s := sim.New(sim.Options{})
	other := s.IDs(sim.DemoKey, "budgets")[5]
	rewrite := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" || !strings.HasSuffix(r.URL.Path, "/v1/budgets") {
			s.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, r)
		var page struct {
			Data       []map[string]any `json:"data"`
			Pagination any              `json:"pagination"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Errorf("the simulator's page: %v", err)
		}
		for _, b := range page.Data {
			for _, p := range b["plannings"].([]any) {
				p.(map[string]any)["budgetId"] = other
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(page)
	})
	srv := httptest.NewServer(rewrite)
	t.Cleanup(srv.Close)
	e := gatewayOn(t, s, srv.URL)
	s.SetLatency(sim.Latency{Fixed: 60 * time.Millisecond})
	_, spans := e.timed(t, `{ budgets(first: 1) { nodes { metrics { variance } plannings { actuals { amount } } } } }`, nil)
	if got := tiers(spans); got != 2 {
		t.Errorf("%d tiers of calls, want 2: the page, then the budget's and its rows' reads side by side", got)
	}
}
