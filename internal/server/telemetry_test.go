package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/costgw/gateway/internal/testhttp"
	"github.com/costgw/gateway/upstream/sim"
)

// scrape GETs url (an admin listener's /metrics) and parses the answer with
// Prometheus' own text parser, under the strict legacy name rules a
// Prometheus server without UTF-8 names applies.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET %s = %d %q, want 200 text/plain", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the metrics do not parse: %v", err)
	}
	return fams
}

// labels are a series' labels as a map.
func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// sample is a series' value: a counter's or gauge's value, a histogram's
// sample count.
func sample(f *dto.MetricFamily, m *dto.Metric) float64 {
	switch f.GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

// value is the value of the series of family name with exactly the labels
// want; it fails the test when there is none.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	for _, m := range f.GetMetric() {
		if maps.Equal(labels(m), want) {
			return sample(f, m)
		}
	}
	t.Errorf("no series %s%v", name, want)
	return -1
}

// series is a time series and the value a test wants of it.
type series struct {
	name   string
	labels map[string]string
	want   float64
}

// wantSeries fails the test for each series of want that fams does not have
// at its value.
func wantSeries(t *testing.T, fams map[string]*dto.MetricFamily, want []series) {
	t.Helper()
	for _, c := range want {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// TestMetrics sends a few GraphQL requests and reads what /metrics on the
// admin listener says of them: operation types and codes, upstream calls by
// route template, the parsed-document cache, the runtime's metrics; and no
// label value that a client chose.
func TestMetrics(t *testing.T) {
	t.Parallel()
	const (
		secret = "sk-live-5d2e8a-never-in-a-metric"
		opName = "SecretOperationName"
	)
	s, up := simUpstream(t, sim.Options{})
	gw := startGateway(t, nil, "-upstream", up.URL, "-admin-listen", "127.0.0.1:0", "-cache", "off")
	admin := gw.adminURL(t)

	list := `query ` + opName + ` { budgets(first: 2) { nodes { id name } } }`
	for range 2 { // the second finds the document in the cache
		if status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, list); err != nil || status != 200 || len(ans.Errors) > 0 {
			t.Fatalf("list: %d %v %+v", status, err, ans.Errors)
		}
	}
	ids := s.IDs(sim.DemoKey, sim.CollectionBudgets)
	_, ans, _ := postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, list)
	var data struct {
		Budgets struct{ Nodes []struct{ ID string } }
	}
	if err := json.Unmarshal(ans.Data, &data); err != nil || len(data.Budgets.Nodes) == 0 {
		t.Fatalf("list: %s %v", ans.Data, err)
	}
	q := fmt.Sprintf(`query ByID { budget(id: %q) { name } }`, data.Budgets.Nodes[0].ID)
	if status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, q); err != nil || status != 200 || len(ans.Errors) > 0 {
		t.Fatalf("by id: %d %v %+v", status, err, ans.Errors)
	}
	_, ans, _ = postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, `{ budgets(`)
	if len(ans.Errors) == 0 || ans.Errors[0].Extensions["code"] != "GRAPHQL_PARSE_FAILED" {
		t.Fatalf("parse error: %+v", ans.Errors)
	}
	// Refused by a limit once parsed: counted as the query it is (it was
	// "unknown", as a document that does not parse).
	aliases := "query TooManyAliases { budgets(first: 1) { nodes {"
	for i := range 31 {
		aliases += fmt.Sprintf(" a%d: name", i)
	}
	_, ans, _ = postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey, aliases+" } } }")
	if len(ans.Errors) == 0 || ans.Errors[0].Extensions["code"] != "MAX_ALIASES_LIMIT" {
		t.Fatalf("aliases past the limit: %+v", ans.Errors)
	}
	_, ans, _ = postGraphQL(t, http.DefaultClient, gw.url, secret, `query WithAKey { budgets(first: 1) { nodes { name } } }`)
	if len(ans.Errors) == 0 || ans.Errors[0].Extensions["code"] != "UNAUTHENTICATED" {
		t.Fatalf("unknown key: %+v", ans.Errors)
	}

	// A plain OPTIONS (no preflight: the CORS handler passes it on) is
	// answered 204 by the endpoint, which recorded no outcome for it: it
	// was counted as code="NONE", a value no code has.
	opts, _ := http.NewRequest(http.MethodOptions, gw.url+"/graphql", nil)
	resp, err := http.DefaultClient.Do(opts)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("OPTIONS /graphql = %d, want 204", resp.StatusCode)
	}

	fams := scrape(t, admin+"/metrics")
	const requests = "costgw_graphql_requests_total"
	for _, m := range fams[requests].GetMetric() {
		if l := labels(m); l["code"] == "NONE" {
			t.Errorf("%s%v: an answer with no code", requests, l)
		}
	}
	bi := readBuildInfo()
	wantSeries(t, fams, []series{
		{requests, map[string]string{"operation_type": "unknown", "code": "OK"}, 1},
		{requests, map[string]string{"operation_type": "query", "code": "OK"}, 4},
		{requests, map[string]string{"operation_type": "unknown", "code": "GRAPHQL_PARSE_FAILED"}, 1},
		{requests, map[string]string{"operation_type": "query", "code": "UNAUTHENTICATED"}, 1},
		{requests, map[string]string{"operation_type": "query", "code": "MAX_ALIASES_LIMIT"}, 1},
		// A histogram's value is its sample count.
		{"costgw_graphql_request_duration_seconds", map[string]string{"operation_type": "query"}, 6},
		{"costgw_graphql_requests_in_flight", map[string]string{}, 0},
		// The list ran three times and the unknown key once; the readiness
		// check at start-up pinged without a key.
		{"costgw_upstream_calls_total", map[string]string{"route": "/v1/budgets", "status": "200"}, 3},
		{"costgw_upstream_calls_total", map[string]string{"route": "/v1/budgets", "status": "401"}, 2},
		{"costgw_upstream_calls_total", map[string]string{"route": "/v1/budgets/{id}", "status": "200"}, 1},
		{"costgw_upstream_call_duration_seconds", map[string]string{"route": "/v1/budgets/{id}"}, 1},
		// Six documents, the list sent three times: two hits, five misses (the
		// one that does not parse is looked up too).
		{"costgw_query_cache_lookups_total", map[string]string{"result": "hit"}, 2},
		{"costgw_query_cache_lookups_total", map[string]string{"result": "miss"}, 5},
		// A limit that refused nothing still has its series, at 0.
		{"costgw_limit_rejections_total", map[string]string{"limit": "depth"}, 0},
		// The build's version and revision, and Go's.
		{"costgw_build_info", map[string]string{"version": bi.Version, "revision": bi.Revision, "goversion": runtime.Version()}, 1},
	})
	for _, name := range []string{
		"costgw_upstream_breakers_open", "costgw_rate_limit_rejections_total", "costgw_callers_paced_total",
		"go_goroutines", "go_memstats_heap_alloc_bytes", "go_gc_duration_seconds", "process_start_time_seconds",
	} {
		if _, ok := fams[name]; !ok {
			t.Errorf("no metric %s", name)
		}
	}

	// Every label value is one of a bounded set: none is an operation name,
	// a key or an upstream id.
	forbidden := append([]string{secret, sim.DemoKey, opName, "ByID", "WithAKey"}, ids...)
	for name, f := range fams {
		if f.GetHelp() == "" {
			t.Errorf("%s has no help", name)
		}
		for _, m := range f.GetMetric() {
			for k, v := range labels(m) {
				for _, bad := range forbidden {
					if bad != "" && strings.Contains(v, bad) {
						t.Errorf("%s{%s=%q} holds %q", name, k, v, bad)
					}
				}
				if k == "route" && !slices.Contains([]string{"/v1/budgets", "/v1/budgets/{id}"}, v) {
					t.Errorf("%s{route=%q}: not a route template of the calls made", name, v)
				}
			}
		}
	}
}

// TestAdminRoutes checks which listener answers what: with -admin-listen,
// the metrics, profiles and health endpoints are on it and not on the public
// listener; without it there is no metrics or profile endpoint, and health
// is public.
func TestAdminRoutes(t *testing.T) {
	t.Parallel()
	operator := []string{"/metrics", "/debug/pprof/", "/debug/pprof/cmdline", "/healthz", "/readyz", "/version"}
	t.Run("with -admin-listen", func(t *testing.T) {
		t.Parallel()
		gw := startGateway(t, nil, "-admin-listen", "127.0.0.1:0")
		admin := gw.adminURL(t)
		for _, p := range operator {
			if status, _, _ := testhttp.Get(t, admin+p); status != http.StatusOK {
				t.Errorf("admin GET %s = %d, want 200", p, status)
			}
			if status, _, _ := testhttp.Get(t, gw.url+p); status != http.StatusNotFound {
				t.Errorf("public GET %s = %d, want 404", p, status)
			}
		}
		if status, _, _ := testhttp.Get(t, admin+"/graphql?query=%7B__typename%7D"); status != http.StatusNotFound {
			t.Errorf("admin GET /graphql = %d, want 404", status)
		}
		if status, _, _ := testhttp.Get(t, gw.url+"/graphql?query=%7B__typename%7D"); status != http.StatusOK {
			t.Errorf("public GET /graphql = %d, want 200", status)
		}
	})
	t.Run("without", func(t *testing.T) {
		t.Parallel()
		gw := startGateway(t, nil)
		for _, l := range gw.logs.JSONLines(t) {
			if _, ok := l["admin"]; ok && l["msg"] == "serving" {
				t.Errorf("the serving line names an admin listener: %v", l)
			}
		}
		for p, want := range map[string]int{
			"/metrics": http.StatusNotFound, "/debug/pprof/": http.StatusNotFound,
			"/healthz": http.StatusOK, "/readyz": http.StatusOK, "/version": http.StatusOK,
		} {
			if status, _, _ := testhttp.Get(t, gw.url+p); status != want {
				t.Errorf("public GET %s = %d, want %d", p, status, want)
			}
		}
	})
}
