package telemetry

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/costgw/gateway/upstream"
)

// captureRT records the request it is given.
type captureRT struct{ got *http.Request }

func (c *captureRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.got = r
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

// graphqlRoute is the route of the requests serveOne serves.
var graphqlRoute = func() *http.ServeMux {
	m := http.NewServeMux()
	m.Handle("/graphql", http.NotFoundHandler())
	return m
}()

// serveOne serves one request through t's middleware, as the server does:
// the operation's span, one upstream attempt through t's transport. It
// returns the request the upstream got, the one the caller made, and the
// span context of the attempt.
func serveOne(t *testing.T, tr *Tracing) (sent, made *http.Request, attempt trace.SpanContext, ended bool) {
	t.Helper()
	rt := &captureRT{}
	h := tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, op := tr.StartOperation(r.Context())
		actx, done := tr.Upstream(ctx, upstream.Attempt{Op: "listBudgets", Method: http.MethodGet, Route: "/v1/budgets", Number: 2})
		attempt = trace.SpanContextFromContext(actx)
		made, _ = http.NewRequestWithContext(actx, http.MethodGet, "http://upstream.test/v1/budgets?limit=5", nil)
		made.Header.Set("Authorization", "Bearer key")
		made.Header.Set("Accept", "application/json")
		if _, err := tr.Transport(rt).RoundTrip(made); err != nil {
			t.Error(err)
		}
		if done != nil {
			ended = true
			done(upstream.AttemptResult{Status: http.StatusServiceUnavailable, RequestID: "req_9", Class: upstream.ClassServerError})
		}
		op.End("BudgetList", "query", "UPSTREAM_UNAVAILABLE", 1, 2, false)
		w.WriteHeader(http.StatusOK)
	}), graphqlRoute)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader("{}")))
	return rt.got, made, attempt, ended
}

// A request that is not sampled records nothing, yet the upstream still
// gets its traceparent, flagged not sampled, on a request of the
// transport's own: the caller's is left as it was.
func TestUnsampledRequestsPropagate(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	sent, made, attempt, ended := serveOne(t, TracingTo(exp, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0))))
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans exported, want none", n)
	}
	if ended {
		t.Error("the attempt of an unsampled request has a func to end its span")
	}
	if !attempt.IsValid() || attempt.IsSampled() {
		t.Fatalf("the attempt's span context %v: want valid and not sampled", attempt)
	}
	want := "00-" + attempt.TraceID().String() + "-" + attempt.SpanID().String() + "-00"
	if got := sent.Header.Get("Traceparent"); got != want {
		t.Errorf("traceparent %q, want %q", got, want)
	}
	if sent == made {
		t.Fatal("the transport changed the caller's request")
	}
	if made.Header.Get("Traceparent") != "" || len(made.Header) != 2 {
		t.Errorf("the caller's headers became %v", made.Header)
	}
	for _, k := range []string{"Authorization", "Accept"} {
		if sent.Header.Get(k) != made.Header.Get(k) {
			t.Errorf("%s: sent %q, made %q", k, sent.Header.Get(k), made.Header.Get(k))
		}
	}
	if sent.URL.String() != made.URL.String() || sent.Context() != made.Context() {
		t.Error("the request sent is not the caller's, but for its headers")
	}
}

// A sampled request's spans carry every attribute, whatever the unsampled
// ones are spared.
func TestSampledSpansKeepTheirAttributes(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	sent, _, attempt, ended := serveOne(t, TracingTo(exp, sdktrace.AlwaysSample()))
	if !ended {
		t.Error("no func to end the attempt's span")
	}
	want := "00-" + attempt.TraceID().String() + "-" + attempt.SpanID().String() + "-01"
	if got := sent.Header.Get("Traceparent"); got != want {
		t.Errorf("traceparent %q, want %q", got, want)
	}
	spans := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		spans[s.Name] = s
	}
	if len(spans) != 3 {
		t.Fatalf("spans %v, want the server's, the operation's and the attempt's", exp.GetSpans().Snapshots())
	}
	check := func(name string, kind trace.SpanKind, want map[attribute.Key]attribute.Value) {
		s, ok := spans[name]
		if !ok {
			t.Errorf("no span %q", name)
			return
		}
		if s.SpanKind != kind {
			t.Errorf("%s: kind %v, want %v", name, s.SpanKind, kind)
		}
		got := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes {
			got[kv.Key] = kv.Value
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", name, k, got[k].Emit(), v.Emit())
			}
		}
	}
	check("GET /v1/budgets", trace.SpanKindClient, map[attribute.Key]attribute.Value{
		"http.request.method": attribute.StringValue("GET"), "url.template": attribute.StringValue("/v1/budgets"),
		"costgw.upstream.operation": attribute.StringValue("listBudgets"), "http.request.resend_count": attribute.IntValue(1),
		"http.response.status_code": attribute.IntValue(503), "costgw.upstream.request_id": attribute.StringValue("req_9"),
		"error.type": attribute.StringValue(string(upstream.ClassServerError)),
	})
	check("query BudgetList", trace.SpanKindInternal, map[attribute.Key]attribute.Value{
		"graphql.operation.name": attribute.StringValue("BudgetList"), "graphql.operation.type": attribute.StringValue("query"),
		"costgw.upstream_calls.estimated": attribute.IntValue(1), "costgw.upstream_calls": attribute.Int64Value(2),
		"costgw.code": attribute.StringValue("UPSTREAM_UNAVAILABLE"),
	})
	check("POST /graphql", trace.SpanKindServer, map[attribute.Key]attribute.Value{
		"http.request.method": attribute.StringValue("POST"), "http.response.status_code": attribute.IntValue(200),
	})
	if s := spans["GET /v1/budgets"]; s.SpanContext.SpanID() != attempt.SpanID() {
		t.Error("the traceparent sent is not the attempt's span")
	}
	if s := spans["query BudgetList"]; s.Status.Code.String() != "Error" || s.Status.Description != "UPSTREAM_UNAVAILABLE" {
		t.Errorf("the operation's status %+v, want Error UPSTREAM_UNAVAILABLE", s.Status)
	}
}

// headerMap is an upstream.HeaderSetter over a map, as the upstream client's
// is over a request's headers.
type headerMap http.Header

func (h headerMap) Set(k, v string) { http.Header(h).Set(k, v) }

// Inject, which the upstream client calls on every attempt's request, sets
// the traceparent of the attempt's span, sampled or not; off, or without a
// span, it sets nothing.
func TestInject(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tr      *Tracing
		want    string // the traceparent's flags; "" for none
		noSpans bool
	}{
		{"unsampled", TracingTo(tracetest.NewNoopExporter(), sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0))), "00", false},
		{"sampled", TracingTo(tracetest.NewNoopExporter(), sdktrace.AlwaysSample()), "01", false},
		{"off", Off(), "", false},
		{"no span", TracingTo(tracetest.NewNoopExporter(), sdktrace.AlwaysSample()), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			if !tc.noSpans {
				ctx, _ = tc.tr.StartOperation(ctx)
				ctx, _ = tc.tr.Upstream(ctx, upstream.Attempt{Op: "getBudget", Method: http.MethodGet, Route: "/v1/budgets/{id}", Number: 1})
			}
			h := headerMap{}
			tc.tr.Inject(ctx, h)
			got := http.Header(h).Get("Traceparent")
			if tc.want == "" {
				if len(h) != 0 {
					t.Errorf("headers %v, want none", h)
				}
				return
			}
			sc := trace.SpanContextFromContext(ctx)
			if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + tc.want; got != want {
				t.Errorf("traceparent %q, want %q", got, want)
			}
		})
	}
}

// The server span of a sampled request follows the HTTP semantic
// conventions: named by method and route (the method alone where no route
// takes the path), the request's attributes, the status the handler
// answered, an error only for a 5xx or a panic; the handler can still flush
// through it; an untraced path gets no span.
func TestServerSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := TracingTo(exp, sdktrace.AlwaysSample())
	routes := http.NewServeMux()
	routes.Handle("/graphql", http.NotFoundHandler())
	routes.Handle("GET /fail", http.NotFoundHandler())
	routes.Handle("GET /panic", http.NotFoundHandler())
	h := tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !trace.SpanFromContext(r.Context()).IsRecording() && r.URL.Path != "/healthz" {
			t.Errorf("%s: the handler's context has no recording span", r.URL.Path)
		}
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(http.StatusBadGateway)
		case "/missing":
			http.NotFound(w, r)
		case "/panic":
			panic("a bug")
		default:
			_ = http.NewResponseController(w).Flush()
			_, _ = w.Write([]byte("{}"))
		}
	}), routes, "/healthz")
	for _, c := range []struct {
		method, url, name, route string
		status                   int    // 0: none sent
		errType                  string // "": no error
		method2                  string // http.request.method_original
		host                     string
		port                     int64
	}{
		{http.MethodPost, "http://gw.test:8080/graphql", "POST /graphql", "/graphql", http.StatusOK, "", "", "gw.test", 8080},
		{http.MethodGet, "http://gw.test:8080/fail", "GET /fail", "/fail", http.StatusBadGateway, "502", "", "gw.test", 8080},
		{http.MethodGet, "http://gw.test:8080/missing", "GET", "", http.StatusNotFound, "", "", "gw.test", 8080},
		{http.MethodGet, "http://gw.test:8080/panic", "GET /panic", "/panic", http.StatusInternalServerError, "panic", "", "gw.test", 8080},
		{"BREW", "http://[::1]/graphql", "HTTP /graphql", "/graphql", http.StatusOK, "", "BREW", "::1", 0},
		{http.MethodGet, "http://gw.test:99999/healthz", "", "", 0, "", "", "", 0},
	} {
		exp.Reset()
		r := httptest.NewRequest(c.method, c.url, nil)
		r.Header.Set("User-Agent", "probe/1")
		w := httptest.NewRecorder()
		func() {
			defer func() {
				if p := recover(); (p != nil) != (c.errType == "panic") {
					t.Errorf("%s: panic %v", c.url, p)
				}
			}()
			h.ServeHTTP(w, r)
		}()
		spans := exp.GetSpans()
		if c.name == "" {
			if len(spans) != 0 {
				t.Errorf("%s: %d spans for an untraced path", c.url, len(spans))
			}
			continue
		}
		if len(spans) != 1 {
			t.Fatalf("%s %s: %d spans", c.method, c.url, len(spans))
		}
		s := spans[0]
		if s.Name != c.name || s.SpanKind != trace.SpanKindServer {
			t.Errorf("span %q of kind %v, want %q, server", s.Name, s.SpanKind, c.name)
		}
		a := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes {
			a[kv.Key] = kv.Value
		}
		wantMethod := c.method
		if c.method2 != "" {
			wantMethod = "_OTHER"
		}
		for k, want := range map[attribute.Key]string{
			"http.request.method": wantMethod, "http.request.method_original": c.method2, "http.route": c.route,
			"url.path": r.URL.Path, "url.scheme": "http", "server.address": c.host, "network.peer.address": "192.0.2.1",
			"user_agent.original": "probe/1", "network.protocol.version": "1.1", "error.type": c.errType,
		} {
			if got := a[k].AsString(); got != want {
				t.Errorf("%s %s: %s = %q, want %q", c.method, c.url, k, got, want)
			}
		}
		for k, want := range map[attribute.Key]int64{
			"server.port": c.port, "network.peer.port": 1234, "http.response.status_code": int64(c.status),
		} {
			if got := a[k].AsInt64(); got != want {
				t.Errorf("%s %s: %s = %d, want %d", c.method, c.url, k, got, want)
			}
		}
		if (s.Status.Code == codes.Error) != (c.errType != "") {
			t.Errorf("%s: status %v, error.type %q", c.url, s.Status.Code, c.errType)
		}
		if c.status == http.StatusOK && !w.Flushed {
			t.Errorf("%s: the handler's flush did not reach the writer", c.url)
		}
	}
}
