package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/costgw/gateway/internal/telemetry"
	"github.com/costgw/gateway/internal/testhttp"
	"github.com/costgw/gateway/upstream/sim"
)

// traced is a gateway whose spans go to an in-memory exporter, in front of
// a simulator that records what reaches it.
type traced struct {
	gw    *gateway
	spans *tracetest.InMemoryExporter
	up    *recordingUpstream
	sim   *sim.Server
	// upHost and upPort are where the gateway calls the upstream.
	upHost string
	upPort int64
}

// startTracedGateway starts a gateway with args, tracing every span it may
// (parent based, always on: the default), in front of a recording
// simulator with opts.
func startTracedGateway(t *testing.T, opts sim.Options, args ...string) *traced {
	t.Helper()
	tr := &traced{spans: tracetest.NewInMemoryExporter(), up: &recordingUpstream{}, sim: sim.New(opts)}
	srv := httptest.NewServer(tr.up.wrap(tr.sim))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	tr.upHost = u.Hostname()
	tr.upPort, _ = strconv.ParseInt(u.Port(), 10, 64)
	tr.gw = startTraced(t, telemetry.TracingTo(tr.spans, sdktrace.ParentBased(sdktrace.AlwaysSample())),
		append([]string{"-upstream", srv.URL}, args...)...)
	return tr
}

// post sends a GraphQL query with key and, if not empty, a traceparent
// header.
func post(t *testing.T, baseURL, key, traceparent, query string) gqlResponse {
	t.Helper()
	var header []string
	if traceparent != "" {
		header = []string{"traceparent", traceparent}
	}
	resp, err := http.DefaultClient.Do(graphQLRequest(baseURL, key, map[string]string{"query": query}, header...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans gqlResponse
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatal(err)
	}
	return ans
}

// trace returns the spans of trace id, once its server span has ended (the
// gateway's last, which can end after the caller has its answer).
func (tr *traced) trace(t *testing.T, id string) tracetest.SpanStubs {
	t.Helper()
	var spans tracetest.SpanStubs
	waitFor(t, 5*time.Second, "the server span of trace "+id, func() bool {
		spans = nil
		done := false
		for _, s := range tr.spans.GetSpans() {
			if s.SpanContext.TraceID().String() == id {
				spans = append(spans, s)
				done = done || s.SpanKind == trace.SpanKindServer
			}
		}
		return done
	})
	return spans
}

// attrs are a span's attributes by key.
func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		out[kv.Key] = kv.Value
	}
	return out
}

// parseTraceparent splits a W3C traceparent into its trace id, parent span
// id and flags.
func parseTraceparent(t *testing.T, h string) (traceID, spanID, flags string) {
	t.Helper()
	parts := strings.Split(h, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		t.Fatalf("traceparent %q is not a W3C version 00 traceparent", h)
	}
	return parts[1], parts[2], parts[3]
}

// TestTraceTree sends a request that carries a caller's traceparent and
// checks the trace the gateway adds to it: the server span continues the
// caller's, the operation's span is under it, one client span per upstream
// call is under that, and each upstream request carries its client span's
// traceparent.
func TestTraceTree(t *testing.T) {
	t.Parallel()
	const (
		traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
		callerID = "00f067aa0ba902b7"
		// A list, then each budget's detail: three upstream calls.
		query = `query Named { budgets(first: 2) { nodes { name metrics { variance } } } }`
	)
	tr := startTracedGateway(t, sim.Options{})
	if ans := post(t, tr.gw.url, sim.DemoKey, "00-"+traceID+"-"+callerID+"-01", query); len(ans.Errors) > 0 {
		t.Fatalf("errors: %+v", ans.Errors)
	}
	spans := tr.trace(t, traceID)

	var server, op []tracetest.SpanStub
	clients := map[string]tracetest.SpanStub{} // by span id
	for _, s := range spans {
		switch s.SpanKind {
		case trace.SpanKindServer:
			server = append(server, s)
		case trace.SpanKindInternal:
			op = append(op, s)
		case trace.SpanKindClient:
			clients[s.SpanContext.SpanID().String()] = s
		default:
			t.Errorf("span %q of kind %v", s.Name, s.SpanKind)
		}
	}
	if len(server) != 1 || len(op) != 1 {
		t.Fatalf("%d server and %d operation spans, want 1 of each: %v", len(server), len(op), spanNames(spans))
	}
	if p := server[0].Parent; !p.IsRemote() || p.SpanID().String() != callerID {
		t.Errorf("the server span's parent is %v, want the caller's span %s", p.SpanID(), callerID)
	}
	if server[0].Name != "POST /graphql" {
		t.Errorf("server span named %q", server[0].Name)
	}
	if op[0].Parent.SpanID() != server[0].SpanContext.SpanID() {
		t.Errorf("the operation span's parent is not the server span")
	}
	if op[0].Name != "query Named" {
		t.Errorf("operation span named %q, want %q", op[0].Name, "query Named")
	}
	a := attrs(op[0])
	for k, want := range map[attribute.Key]attribute.Value{
		"graphql.operation.name":          attribute.StringValue("Named"),
		"graphql.operation.type":          attribute.StringValue("query"),
		"costgw.upstream_calls.estimated": attribute.Int64Value(3),
		"costgw.upstream_calls":           attribute.Int64Value(3),
		"costgw.code":                     attribute.StringValue("OK"),
	} {
		if a[k] != want {
			t.Errorf("operation span %s = %v, want %v", k, a[k].Emit(), want.Emit())
		}
	}

	// The upstream got one request per client span, each with that span as
	// its parent, in the caller's trace.
	ids := tr.sim.IDs(sim.DemoKey, sim.CollectionBudgets)
	var calls int
	for _, c := range tr.up.keyed() {
		if c.traceparent == "" {
			t.Errorf("GET %s reached the upstream without a traceparent", c.path)
			continue
		}
		tid, sid, flags := parseTraceparent(t, c.traceparent)
		if tid != traceID {
			continue // the readiness check at start-up
		}
		calls++
		if flags != "01" {
			t.Errorf("GET %s: traceparent flags %s, want sampled", c.path, flags)
		}
		s, ok := clients[sid]
		if !ok {
			t.Errorf("GET %s: the traceparent's parent %s is no client span", c.path, sid)
			continue
		}
		if s.Parent.SpanID() != op[0].SpanContext.SpanID() {
			t.Errorf("client span %q is not under the operation span", s.Name)
		}
		a := attrs(s)
		route := a["url.template"].AsString()
		if s.Name != "GET "+route || !strings.HasPrefix(c.path, "/v1/budgets") {
			t.Errorf("GET %s: client span %q, route template %q", c.path, s.Name, route)
		}
		if strings.Contains(c.path, "/v1/budgets/") && !strings.Contains(route, "{id}") {
			t.Errorf("GET %s: route %q is no template", c.path, route)
		}
		for _, id := range ids {
			if strings.Contains(s.Name, id) || strings.Contains(route, id) {
				t.Errorf("client span %q (route %q) holds the budget id %s", s.Name, route, id)
			}
		}
		if got := a["http.response.status_code"].AsInt64(); got != http.StatusOK {
			t.Errorf("GET %s: span status code %d", c.path, got)
		}
		if got := a["costgw.upstream.request_id"].AsString(); got == "" || got != c.requestID {
			t.Errorf("GET %s: span request id %q, the upstream answered %q", c.path, got, c.requestID)
		}
		if a["server.address"].AsString() != tr.upHost || a["server.port"].AsInt64() != tr.upPort {
			t.Errorf("GET %s: span server.address %q, server.port %d; want %s and %d", c.path,
				a["server.address"].AsString(), a["server.port"].AsInt64(), tr.upHost, tr.upPort)
		}
		if got := a["http.request.resend_count"]; got.AsInt64() != 0 {
			t.Errorf("GET %s: resend count %v on a first attempt", c.path, got.Emit())
		}
		delete(clients, sid)
	}
	if calls != 3 || len(clients) != 0 {
		t.Errorf("%d upstream calls in the trace, client spans without a call: %v", calls, spanNames(values(clients)))
	}

	// The request's log line names the trace and the server span.
	var found bool
	for _, l := range tr.gw.logs.JSONLines(t) {
		if l["msg"] != "request" || l["path"] != "/graphql" {
			continue
		}
		found = true
		if l["trace_id"] != traceID || l["span_id"] != server[0].SpanContext.SpanID().String() {
			t.Errorf("access line trace_id %v span_id %v, want %s %s", l["trace_id"], l["span_id"], traceID, server[0].SpanContext.SpanID())
		}
	}
	if !found {
		t.Errorf("no access line:\n%s", tr.gw.logs)
	}
}

func spanNames(spans []tracetest.SpanStub) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.SpanKind.String()+" "+s.Name)
	}
	return out
}

func values[K comparable, V any](m map[K]V) []V {
	var out []V
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestTraceRetries checks that every attempt of a retried call has its own
// client span and traceparent, numbered by its resend count, and that the
// spans, the upstream and the metrics agree on how many there were.
func TestTraceRetries(t *testing.T) {
	t.Parallel()
	const traceID = "5c0ffee0000000000000000000000001"
	tr := startTracedGateway(t, sim.Options{Faults: sim.Faults{Error500: 1}}, "-admin-listen", "127.0.0.1:0")
	ans := post(t, tr.gw.url, sim.DemoKey, "00-"+traceID+"-00f067aa0ba902b7-01", `query Failing { budgets(first: 1) { nodes { name } } }`)
	if len(ans.Errors) == 0 {
		t.Fatalf("no error from an upstream that always fails")
	}
	code, _ := ans.Errors[0].Extensions["code"].(string)
	spans := tr.trace(t, traceID)

	clients := map[string]tracetest.SpanStub{}
	var op tracetest.SpanStub
	for _, s := range spans {
		switch s.SpanKind {
		case trace.SpanKindClient:
			clients[s.SpanContext.SpanID().String()] = s
		case trace.SpanKindInternal:
			op = s
		}
	}
	var resends []int64
	for _, c := range tr.up.keyed() {
		tid, sid, _ := parseTraceparent(t, c.traceparent)
		if tid != traceID {
			continue
		}
		s, ok := clients[sid]
		if !ok {
			t.Errorf("an attempt's traceparent names no client span: %s", c.traceparent)
			continue
		}
		a := attrs(s)
		resends = append(resends, a["http.request.resend_count"].AsInt64())
		if a["http.response.status_code"].AsInt64() != 500 || a["error.type"].AsString() != "server_error" || s.Status.Code != codes.Error {
			t.Errorf("attempt span %q: %v, status %v", s.Name, s.Attributes, s.Status)
		}
		if a["costgw.upstream.request_id"].AsString() != c.requestID {
			t.Errorf("attempt span request id %q, upstream answered %q", a["costgw.upstream.request_id"].AsString(), c.requestID)
		}
	}
	n := len(resends)
	if n < 2 || n != len(clients) {
		t.Fatalf("%d attempts reached the upstream, %d client spans; want the same, and a retry", n, len(clients))
	}
	for i, r := range resends {
		if r != int64(i) {
			t.Errorf("resend counts %v, want 0 to %d in order", resends, n-1)
			break
		}
	}
	oa := attrs(op)
	if oa["costgw.upstream_calls"].AsInt64() != int64(n) || oa["costgw.code"].AsString() != code || op.Status.Code != codes.Error {
		t.Errorf("operation span: %v, status %v; want %d calls and code %s", op.Attributes, op.Status, n, code)
	}

	fams := scrape(t, tr.gw.adminURL(t)+"/metrics")
	if got := value(t, fams, "costgw_upstream_retries_total", map[string]string{"route": "/v1/budgets"}); got != float64(n-1) {
		t.Errorf("costgw_upstream_retries_total = %v, want %d", got, n-1)
	}
	if got := value(t, fams, "costgw_graphql_requests_total", map[string]string{"operation_type": "query", "code": code}); got != 1 {
		t.Errorf("requests with code %s = %v, want 1", code, got)
	}
}

// TestTraceSampling checks that the gateway starts a trace of its own for a
// request without a traceparent, and follows a caller's decision not to
// sample while still passing the trace on.
func TestTraceSampling(t *testing.T) {
	t.Parallel()
	tr := startTracedGateway(t, sim.Options{}, "-cache", "off") // each request sends its call
	const query = `query One { budgets(first: 1) { nodes { name } } }`

	post(t, tr.gw.url, sim.DemoKey, "", query)
	var root tracetest.SpanStub
	waitFor(t, 5*time.Second, "a root server span", func() bool {
		for _, s := range tr.spans.GetSpans() {
			if s.SpanKind == trace.SpanKindServer {
				root = s
				return true
			}
		}
		return false
	})
	if root.Parent.IsValid() {
		t.Errorf("the server span of a request without traceparent has a parent: %v", root.Parent)
	}
	if spans := tr.trace(t, root.SpanContext.TraceID().String()); len(spans) != 3 {
		t.Errorf("the gateway's own trace has %v, want server, operation and client spans", spanNames(spans))
	}

	const unsampled = "0af7651916cd43dd8448eb211c80319c"
	post(t, tr.gw.url, sim.DemoKey, "00-"+unsampled+"-b7ad6b7169203331-00", query)
	var passed bool
	for _, c := range tr.up.keyed() {
		if tid, _, flags := parseTraceparent(t, c.traceparent); tid == unsampled {
			passed = true
			if flags != "00" {
				t.Errorf("the upstream got %q for an unsampled trace", c.traceparent)
			}
		}
	}
	if !passed {
		t.Errorf("the unsampled trace did not reach the upstream")
	}
	// A span ending late would show by now: nothing says that no more will
	// end, so this waits a while for something not to happen.
	time.Sleep(50 * time.Millisecond)
	for _, s := range tr.spans.GetSpans() {
		if s.SpanContext.TraceID().String() == unsampled {
			t.Errorf("span %q recorded in a trace the caller did not sample", s.Name)
		}
	}
}

// TestSpansHoldNoKey sends a key everywhere a client might put it and checks
// that no span name, attribute, event or status holds it.
func TestSpansHoldNoKey(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-0e4b7d-never-in-a-span"
	tr := startTracedGateway(t, sim.Options{})
	post(t, tr.gw.url, secret, "", `query Leak { budgets(first: 1) { nodes { name } } }`)
	post(t, tr.gw.url, sim.DemoKey, "", `query Named { budgets(first: 2) { nodes { name metrics { variance } } } }`)
	testhttp.Get(t, tr.gw.url+"/graphql?query=%7B__typename%7D&key="+secret,
		"Authorization", "Bearer "+secret, "X-Api-Key", secret, "Cookie", "k="+secret, "User-Agent", "test")
	testhttp.Get(t, tr.gw.url+"/version", "Authorization", "Bearer "+secret)
	waitFor(t, 5*time.Second, "four server spans", func() bool {
		n := 0
		for _, s := range tr.spans.GetSpans() {
			if s.SpanKind == trace.SpanKindServer {
				n++
			}
		}
		return n == 4
	})
	spans := tr.spans.GetSpans()
	var kinds [6]int
	for _, s := range spans {
		kinds[s.SpanKind]++
		texts := []string{s.Name, s.Status.Description}
		for _, kv := range s.Attributes {
			texts = append(texts, kv.Value.Emit())
		}
		for _, e := range s.Events {
			texts = append(texts, e.Name)
			for _, kv := range e.Attributes {
				texts = append(texts, kv.Value.Emit())
			}
		}
		for _, kv := range s.Resource.Attributes() {
			texts = append(texts, kv.Value.Emit())
		}
		for _, text := range texts {
			for _, key := range []string{secret, sim.DemoKey} {
				if strings.Contains(text, key) {
					t.Errorf("span %q holds a key: %q", s.Name, text)
				}
			}
		}
	}
	if kinds[trace.SpanKindClient] < 4 {
		t.Errorf("spans %v: want the upstream calls among them", spanNames(spans))
	}
}

// TestTracingOff checks that without tracing nothing is added: no
// traceparent reaches the upstream, even when the caller sent one, and no
// log line has a trace id.
func TestTracingOff(t *testing.T) {
	t.Parallel()
	up := &recordingUpstream{}
	srv := httptest.NewServer(up.wrap(sim.New(sim.Options{})))
	t.Cleanup(srv.Close)
	gw := startGateway(t, nil, "-upstream", srv.URL)
	post(t, gw.url, sim.DemoKey, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		`{ budgets(first: 1) { nodes { name } } }`)
	for _, c := range up.all() {
		if c.traceparent != "" {
			t.Errorf("GET %s reached the upstream with traceparent %q", c.path, c.traceparent)
		}
	}
	if strings.Contains(gw.logs.String(), "trace_id") {
		t.Errorf("logs hold a trace id with tracing off:\n%s", gw.logs)
	}
}

// recordingUpstream serves a simulator and records the path, traceparent
// and answered request id of every request it gets.
type recordingUpstream struct {
	mu    sync.Mutex
	calls []*upstreamCall
}

type upstreamCall struct {
	path, traceparent, auth string
	requestID               string // set when the answer's header is written
}

func (u *recordingUpstream) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &upstreamCall{path: r.URL.Path, traceparent: r.Header.Get("traceparent"), auth: r.Header.Get("Authorization")}
		u.mu.Lock()
		u.calls = append(u.calls, c)
		u.mu.Unlock()
		next.ServeHTTP(&idWriter{ResponseWriter: w, u: u, c: c}, r)
	})
}

// keyed returns the calls made with a key: all but the readiness pings
// (the one at start included), which make no span.
func (u *recordingUpstream) keyed() []upstreamCall {
	var out []upstreamCall
	for _, c := range u.all() {
		if c.auth != "" {
			out = append(out, c)
		}
	}
	return out
}

func (u *recordingUpstream) all() []upstreamCall {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]upstreamCall, len(u.calls))
	for i, c := range u.calls {
		out[i] = *c
	}
	return out
}

// idWriter notes the request id of an answer as its header goes out, so it
// is known before the gateway reads the answer.
type idWriter struct {
	http.ResponseWriter
	u    *recordingUpstream
	c    *upstreamCall
	once sync.Once
}

func (w *idWriter) note() {
	w.once.Do(func() {
		w.u.mu.Lock()
		w.c.requestID = w.Header().Get("X-Request-Id")
		w.u.mu.Unlock()
	})
}

func (w *idWriter) WriteHeader(code int) { w.note(); w.ResponseWriter.WriteHeader(code) }

func (w *idWriter) Write(p []byte) (int, error) { w.note(); return w.ResponseWriter.Write(p) }

// TestProbesMakeNoTraces checks that readiness and liveness probes, which
// arrive every few seconds, record no span: neither their server span nor
// the upstream ping behind /readyz. Before, each probe was a trace of its
// own.
func TestProbesMakeNoTraces(t *testing.T) {
	t.Parallel()
	tr := startTracedGateway(t, sim.Options{})
	for range 3 {
		for _, path := range probePaths {
			resp, err := http.Get(tr.gw.url + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %s", path, resp.Status)
			}
		}
	}
	if n := len(tr.up.all()); n < 3 {
		t.Fatalf("the upstream saw %d calls, want the pings of 3 readiness probes at least", n)
	}
	for _, s := range tr.spans.GetSpans() {
		t.Errorf("probe recorded span %q (%v)", s.Name, s.SpanKind)
	}
}
