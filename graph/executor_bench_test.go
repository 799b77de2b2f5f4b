package graph_test

// Benchmarks of what the executor costs per field of a response, so that a
// change to the executor path shows its effect in review:
//
//	go test -run '^$' -bench BenchmarkExecutor -benchmem ./graph
//
// Each runs a query through the real GraphQL handler (graph.NewHandler: body
// limit, key, loaders, limits, executor, resolvers, error presenter) and
// reports, besides ns/op, B/op and allocs/op of the whole request:
//
//	fields/op       fields in the response: every member of every object under "data",
//	                a JSON scalar counting as one
//	upstream-ns/op  the same upstream calls made with the same client, alone
//	ns/field        (ns/op − upstream-ns/op) ÷ fields/op
//	allocs/field    (allocs/op − the upstream calls' allocs/op) ÷ fields/op
//
// The upstream is kept out of the per-field figures twice over. Its answers
// are recorded once from the simulator and then replayed from memory by the
// client's transport, so no simulator work, socket or network wait is in any
// iteration. What remains of the upstream is the client itself (building
// each request, decoding each answer), which the gateway needs whatever its
// executor does: that is measured on its own, by making the query's upstream
// calls with the same client on the same replayed answers, and subtracted.
// The parsed document is cached after the first request, as it is for any
// query a frontend repeats, so parsing and validation are in the first
// request only; the limits, the executor and the marshalling of the answer
// are in every one.

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
	"sync/atomic"
	"testing"
	"time"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
)

// BenchmarkExecutorWideList: a list of 200 records with every field, one
// upstream call.
func BenchmarkExecutorWideList(b *testing.B) {
	b.Run("recommendations", func(b *testing.B) {
		benchExecutor(b, execWideRecommendations, nil, func(ctx context.Context, c *upstream.Client) error {
			_, err := c.Recommendations.List(ctx, &upstream.ListOptions{Limit: 200})
			return err
		})
	})
	b.Run("anomalies", func(b *testing.B) {
		benchExecutor(b, execWideAnomalies, nil, func(ctx context.Context, c *upstream.Client) error {
			_, err := c.Anomalies.List(ctx, &upstream.ListOptions{Limit: 200})
			return err
		})
	})
}

// BenchmarkExecutorDeepObject: a budget, its planning rows, each row's
// budget, its rows, and so on, as deep as the default depth limit (20)
// allows, every scalar field at every level. The upstream call is one read
// of the budget, shared by every level through the request's loader.
func BenchmarkExecutorDeepObject(b *testing.B) {
	var id string
	benchExecutor(b, execDeepQuery(execDeepLevels), func(ctx context.Context, c *upstream.Client) (map[string]any, error) {
		var err error
		id, err = execSmallestBudget(ctx, c)
		return map[string]any{"id": relay.BudgetID(id)}, err
	}, func(ctx context.Context, c *upstream.Client) error {
		_, err := c.Budgets.Get(ctx, id)
		return err
	})
}

const execWideRecommendations = `{
  recommendations(first: 200) {
    nodes {
      recommendationId recommendationName estimatedMonthlySavings implementationEffort
      category actionType accountName region resourceId extra
    }
    pageInfo { hasNextPage endCursor }
  }
}`

const execWideAnomalies = `{
  anomalies(first: 200) {
    nodes {
      anomalyId service startDate endDate scoreCurrent scoreMax impactMax impactTotal impactPct
      impactActualSpend impactExpectedSpend dimensionValue detectionSource extra
    }
    pageInfo { hasNextPage endCursor }
  }
}`

// execDeepLevels is how many budget levels fit in the default depth limit:
// budget(id) is at depth 1, its rows at 2, their budget at 3, …, the last
// budget at 19, its scalars at 20.
const execDeepLevels = 10

const execBudgetScalars = `id upstreamId name targetType period status numberOfPeriods startDate endDate lookbackPeriod
budgetType startingValue customStartingValue growthRate normalizationPeriod organizationId serviceClientId
creatorId explorerReportId createdAt updatedAt`

const execPlanningScalars = `id upstreamId budgetId dimension1 dimension2 previousMonth avgLookback percentGrowth
percentSpend targetType createdAt targetItems { dimensionValue amount }`

// execDeepQuery nests levels budgets: budget { plannings { budget { … } } }.
func execDeepQuery(levels int) string {
	inner := execBudgetScalars
	for range levels - 1 {
		inner = execBudgetScalars + "\nplannings {\n" + execPlanningScalars + "\nbudget {\n" + inner + "\n}\n}"
	}
	return "query Deep($id: ID!) {\nbudget(id: $id) {\n" + inner + "\n}\n}"
}

// execSmallestBudget is the budget of organization one with the fewest
// planning rows, so that the deep object grows as little in width as its
// depth allows (each level multiplies the rows).
func execSmallestBudget(ctx context.Context, c *upstream.Client) (string, error) {
	pg, err := c.Budgets.List(ctx, &upstream.ListOptions{Limit: upstream.MaxPageSize})
	if err != nil {
		return "", err
	}
	best := -1
	for i, b := range pg.Data {
		if len(b.Plannings) > 0 && (best < 0 || len(b.Plannings) < len(pg.Data[best].Plannings)) {
			best = i
		}
	}
	if best < 0 {
		return "", fmt.Errorf("no budget with planning rows")
	}
	return pg.Data[best].ID, nil
}

// benchExecutor runs query (with the variables vars returns, if any)
// through the handler on replayed upstream answers, and the upstream calls
// alone with calls, and reports the figures the file's comment describes.
func benchExecutor(b *testing.B, query string, vars func(context.Context, *upstream.Client) (map[string]any, error),
	calls func(context.Context, *upstream.Client) error) {
	ctx := upstream.WithAPIKey(context.Background(), sim.DemoKey)
	srv := httptest.NewServer(sim.New(sim.Options{}))
	defer srv.Close()
	rec := &execReplay{next: upstream.NewTransport(), answers: map[string]execAnswer{}}
	live, err := upstream.NewClient(srv.URL, upstream.WithHTTPClient(&http.Client{Transport: rec, Timeout: 10 * time.Second}))
	if err != nil {
		b.Fatal(err)
	}
	var v map[string]any
	if vars != nil {
		if v, err = vars(ctx, live); err != nil {
			b.Fatal(err)
		}
	}
	body, err := json.Marshal(map[string]any{"query": query, "variables": v})
	if err != nil {
		b.Fatal(err)
	}
	serve := func(h http.Handler) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, postRequest(body, sim.DemoKey))
		return w
	}

	// Record: the query once against the simulator, then every later
	// request from memory.
	serve(graph.NewHandler(graph.Options{Client: live, CursorSecret: []byte("bench")}))
	rec.replay.Store(true)
	c, err := upstream.NewClient(srv.URL, upstream.WithHTTPClient(&http.Client{Transport: rec, Timeout: 10 * time.Second}))
	if err != nil {
		b.Fatal(err)
	}
	h := graph.NewHandler(graph.Options{Client: c, CursorSecret: []byte("bench")})
	w := serve(h)
	fields, err := execCountFields(w.Body.Bytes())
	if err != nil || w.Code != 200 {
		b.Fatalf("status %d, %v: %.500s", w.Code, err, w.Body.Bytes())
	}
	perRequest := rec.replayed.Swap(0)
	if err := calls(ctx, c); err != nil {
		b.Fatal(err)
	}
	if n := rec.replayed.Swap(0); n != perRequest {
		b.Fatalf("the upstream baseline makes %d calls, the query %d", n, perRequest)
	}

	upstreamNs := execTime(func() {
		if err := calls(ctx, c); err != nil {
			b.Fatal(err)
		}
	})
	upstreamAllocs := testing.AllocsPerRun(20, func() { _ = calls(ctx, c) })
	gatewayAllocs := testing.AllocsPerRun(5, func() { serve(h) })

	b.Run("gateway", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if w := serve(h); w.Code != 200 {
				b.Fatalf("status %d", w.Code)
			}
		}
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(float64(fields), "fields/op")
		b.ReportMetric(upstreamNs, "upstream-ns/op")
		b.ReportMetric((ns-upstreamNs)/float64(fields), "ns/field")
		b.ReportMetric((gatewayAllocs-upstreamAllocs)/float64(fields), "allocs/field")
	})
	b.Run("upstream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := calls(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// execTime is the mean time of fn over at least 200 ms and 20 runs, after
// one run to warm up.
func execTime(fn func()) float64 {
	fn()
	start := time.Now()
	n := 0
	for n < 20 || time.Since(start) < 200*time.Millisecond {
		fn()
		n++
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// execJSONFields are the fields of type JSON in the benchmarks' queries:
// their value is one scalar, whatever members it has.
var execJSONFields = map[string]bool{"extra": true, "budgetType": true, "startingValue": true,
	"customStartingValue": true, "growthRate": true}

// execCountFields counts the members of every object under "data", each a
// field of the response (the members of a JSON scalar's value are not),
// after checking that the answer has no error.
func execCountFields(body []byte) (int, error) {
	var a struct {
		Data   any               `json:"data"`
		Errors []json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return 0, err
	}
	if len(a.Errors) > 0 || a.Data == nil {
		return 0, fmt.Errorf("errors in the answer")
	}
	var count func(v any) int
	count = func(v any) int {
		n := 0
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				n++
				if !execJSONFields[k] {
					n += count(x)
				}
			}
		case []any:
			for _, x := range v {
				n += count(x)
			}
		}
		return n
	}
	return count(a.Data), nil
}

// execAnswer is a recorded upstream answer.
type execAnswer struct {
	status int
	header http.Header
	body   []byte
}

// execReplay records the upstream's answers by method and URL, then, once
// replay is set, answers every request from them without any network.
type execReplay struct {
	next     http.RoundTripper
	replay   atomic.Bool
	replayed atomic.Int64

	mu      sync.Mutex
	answers map[string]execAnswer
}

func (t *execReplay) RoundTrip(r *http.Request) (*http.Response, error) {
	key := r.Method + " " + r.URL.String()
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	if t.replay.Load() {
		t.mu.Lock()
		a, ok := t.answers[key]
		t.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("no recorded answer for %s", key)
		}
		t.replayed.Add(1)
		return &http.Response{StatusCode: a.status, Status: http.StatusText(a.status), Header: a.header.Clone(),
			Body: io.NopCloser(bytes.NewReader(a.body)), ContentLength: int64(len(a.body)), Request: r,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(r.URL.Path, "/v1/") {
		return nil, fmt.Errorf("unexpected upstream path %s", r.URL.Path)
	}
	t.mu.Lock()
	t.answers[key] = execAnswer{resp.StatusCode, resp.Header.Clone(), body}
	t.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}
