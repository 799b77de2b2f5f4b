package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

// The keys of the cache tests: the writer, another key of its organization
// (one), and a key of organization two.
const (
	writerKey   = sim.DemoKey
	sameOrgKey  = sim.ReadOnlyKey
	otherOrgKey = sim.OtherOrgKey
)

// cacheRequestTimeout is the -request-timeout of the cache tests' gateways:
// ask fails an answer that comes a second later.
const cacheRequestTimeout = 3 * time.Second

// cacheAnswer is a GraphQL answer with what the cache says of it.
type cacheAnswer struct {
	gqlResponse
	Extensions struct {
		Cache *struct {
			Hits, Misses, AgeSeconds int64
			Stale                    bool
		} `json:"cache"`
		Cost struct {
			UpstreamCalls int64 `json:"upstreamCalls"`
		} `json:"cost"`
	} `json:"extensions"`
	elapsed time.Duration
}

// hits is extensions.cache.hits, -1 when the answer has no cache extension.
func (a cacheAnswer) hits() int64 {
	if a.Extensions.Cache == nil {
		return -1
	}
	return a.Extensions.Cache.Hits
}

func (a cacheAnswer) stale() bool { return a.Extensions.Cache != nil && a.Extensions.Cache.Stale }

func (a cacheAnswer) String() string {
	b, _ := json.Marshal(struct {
		Data       json.RawMessage `json:"data"`
		Errors     any             `json:"errors,omitempty"`
		Extensions any             `json:"extensions"`
	}{a.Data, a.Errors, a.Extensions})
	return fmt.Sprintf("%s (in %v)", b, a.elapsed.Round(time.Millisecond))
}

// fromCache reports whether a is all served from the cache: no error, no
// upstream call.
func (a cacheAnswer) fromCache() bool {
	return len(a.Errors) == 0 && a.hits() > 0 && a.Extensions.Cache.Misses == 0 && a.Extensions.Cost.UpstreamCalls == 0
}

// fromUpstream reports whether a was read from the upstream, nothing from
// the cache.
func (a cacheAnswer) fromUpstream() bool {
	return a.hits() == 0 && a.Extensions.Cache.Misses > 0 && a.Extensions.Cost.UpstreamCalls > 0
}

// ask sends query with vars (nil: none) to g with key and the header
// pairs.
func ask(t *testing.T, g *gateway, key, query string, vars map[string]any, header ...string) cacheAnswer {
	t.Helper()
	req := graphQLRequest(g.url, key, map[string]any{"query": query, "variables": vars}, header...)
	client := &http.Client{Timeout: cacheRequestTimeout + time.Second}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", g.url, err)
	}
	defer resp.Body.Close()
	var a cacheAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("POST %s: %d, body not JSON: %v", g.url, resp.StatusCode, err)
	}
	a.elapsed = time.Since(start)
	return a
}

// The reads of the cache tests: a page of the organization's budgets
// (listBudgets), and one budget (getBudget).
const (
	listQuery   = `query CacheList { budgets(first: 100) { nodes { id name organizationId } } }`
	budgetQuery = `query CacheBudget($id: ID!) { budget(id: $id) { id name organizationId } }`
)

// budgetRow is a budget as listQuery and budgetQuery read it.
type budgetRow struct {
	ID, Name, OrganizationID string
}

// listed returns the budgets of a listQuery answer.
func listed(t *testing.T, a cacheAnswer) []budgetRow {
	t.Helper()
	var d struct{ Budgets *struct{ Nodes []budgetRow } }
	if err := json.Unmarshal(a.Data, &d); err != nil || d.Budgets == nil || len(a.Errors) > 0 {
		t.Fatalf("the list: %s", a)
	}
	return d.Budgets.Nodes
}

func names(list []budgetRow) []string {
	out := make([]string, len(list))
	for i, b := range list {
		out[i] = b.Name
	}
	return out
}

// single returns the budget of a budgetQuery answer, nil for null.
func single(t *testing.T, a cacheAnswer) *budgetRow {
	t.Helper()
	var d struct{ Budget *budgetRow }
	if err := json.Unmarshal(a.Data, &d); err != nil {
		t.Fatalf("the budget: %s", a)
	}
	return d.Budget
}

// warm reads query with vars through g with key until an answer comes from
// the cache, and returns it: the first read may be the key's admission or a
// miss.
func warm(t *testing.T, g *gateway, key, query string, vars map[string]any) cacheAnswer {
	t.Helper()
	var a cacheAnswer
	for range 3 {
		if a = ask(t, g, key, query, vars); a.fromCache() {
			return a
		}
		if len(a.Errors) > 0 {
			break
		}
	}
	t.Fatalf("%s with %s: never served from the cache: %s", query, key, a)
	return a
}

// read is a query of the cache tests with its variables, and the upstream
// operation it calls.
type read struct {
	op, query string
	vars      map[string]any
}

var listRead = read{ops.ListBudgets, listQuery, nil}

func budgetRead(id string) read { return read{ops.GetBudget, budgetQuery, budgetVars(id)} }

// budgetVars are the variables of budgetQuery for the budget of upstream id.
func budgetVars(id string) map[string]any { return map[string]any{"id": relay.BudgetID(id)} }

// TestCacheMetrics reads a list, reads it again, renames one of its budgets
// and reads it once more: /metrics on the admin listener counts a miss, a
// hit, the entry the write evicted and its second miss, and the bytes the
// list's entry holds.
func TestCacheMetrics(t *testing.T) {
	t.Parallel()
	s, up := simUpstream(t, sim.Options{})
	gw := startGateway(t, nil, "-upstream", up.URL, "-admin-listen", "127.0.0.1:0")
	update := `mutation($in: UpdateBudgetInput!) { updateBudget(input: $in) { userErrors { message } } }`
	rename := map[string]any{"in": map[string]any{"id": relay.BudgetID(s.IDs(writerKey, sim.CollectionBudgets)[0]), "name": "Renamed"}}
	for _, q := range []read{listRead, listRead, {ops.UpdateBudget, update, rename}, listRead} {
		if a := ask(t, gw, writerKey, q.query, q.vars); len(a.Errors) > 0 {
			t.Fatalf("%s: %s", q.op, a)
		}
	}
	fams := scrape(t, gw.adminURL(t)+"/metrics")
	wantSeries(t, fams, []series{
		{"costgw_upstream_cache_lookups_total", map[string]string{"operation": ops.ListBudgets, "result": "miss"}, 2},
		{"costgw_upstream_cache_lookups_total", map[string]string{"operation": ops.ListBudgets, "result": "hit"}, 1},
		{"costgw_upstream_cache_lookups_total", map[string]string{"operation": ops.ListBudgets, "result": "stale"}, 0},
		{"costgw_upstream_cache_lookups_total", map[string]string{"operation": ops.GetBudget, "result": "miss"}, 0},
		{"costgw_upstream_cache_evictions_total", map[string]string{"operation": ops.ListBudgets, "reason": "write"}, 1},
		{"costgw_upstream_cache_evictions_total", map[string]string{"operation": ops.ListBudgets, "reason": "size"}, 0},
	})
	if got := value(t, fams, "costgw_upstream_cache_bytes", map[string]string{"operation": ops.ListBudgets}); got <= 0 {
		t.Errorf("costgw_upstream_cache_bytes of listBudgets = %v, want the entry's bytes", got)
	}
	if got := value(t, fams, "costgw_upstream_cache_bytes", map[string]string{"operation": ops.GetBudget}); got != 0 {
		t.Errorf("costgw_upstream_cache_bytes of getBudget = %v, want 0: nothing read", got)
	}
}

// TestCacheSpans checks costgw.cache.result on the spans of an upstream
// read: miss and refresh (Cache-Control: no-cache) on the call sent; hit
// on the span of a read answered from the cache, which sends nothing; and,
// past the TTL with the upstream failing, miss on the attempts sent and
// stale on the span of the answer from the expired entry.
func TestCacheSpans(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	tr := startTracedGateway(t, sim.Options{}, "-cache-ttl", "getBudget="+ttl.String())
	get := budgetRead(tr.sim.IDs(writerKey, sim.CollectionBudgets)[0])
	n := 0
	// send reads get in a trace of its own, and returns the answer and the
	// trace's id.
	send := func(header ...string) (cacheAnswer, string) {
		n++
		id := fmt.Sprintf("%032x", 0xcace0+n)
		header = append([]string{"traceparent", "00-" + id + "-00f067aa0ba902b7-01"}, header...)
		a := ask(t, tr.gw, writerKey, get.query, get.vars, header...)
		if len(a.Errors) > 0 {
			t.Fatalf("the read: %s", a)
		}
		return a, id
	}
	for _, c := range []struct {
		name string
		want []string // the results of the trace's getBudget spans, sorted, each once
		read func() (cacheAnswer, string)
	}{
		{"the first read", []string{"miss"}, func() (cacheAnswer, string) { return send() }},
		{"the second", []string{"hit"}, func() (cacheAnswer, string) { return send() }},
		{"with no-cache", []string{"refresh"}, func() (cacheAnswer, string) { return send("Cache-Control", "no-cache") }},
		{"past the TTL, the upstream failing", []string{"miss", "stale"}, func() (cacheAnswer, string) {
			tr.sim.SetFaults(sim.Faults{Error500: 1})
			a, id := send()
			for deadline := time.Now().Add(5 * time.Second); !a.stale() && time.Now().Before(deadline); {
				time.Sleep(ttl / 10)
				a, id = send()
			}
			return a, id
		}},
	} {
		_, id := c.read()
		var got []string
		for _, s := range tr.trace(t, id) {
			if a := attrs(s); s.SpanKind == trace.SpanKindClient && a["costgw.upstream.operation"].AsString() == ops.GetBudget {
				got = append(got, a["costgw.cache.result"].AsString())
			}
		}
		slices.Sort(got)
		if got = slices.Compact(got); !slices.Equal(got, c.want) {
			t.Errorf("%s: the getBudget spans' costgw.cache.result %q, want %q", c.name, got, c.want)
		}
		sent := slices.ContainsFunc(tr.up.keyed(), func(u upstreamCall) bool { return strings.Contains(u.traceparent, id) })
		if want := !slices.Equal(c.want, []string{"hit"}); sent != want {
			t.Errorf("%s: a call of the trace reached the upstream: %v, want %v", c.name, sent, want)
		}
	}
}
