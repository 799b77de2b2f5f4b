package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	gqlcodes "github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/upstream"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestSamplerFrom(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, arg string
		want      sdktrace.Sampler // nil: an error naming wantErr
		wantErr   string
	}{
		{"", "", sdktrace.ParentBased(sdktrace.AlwaysSample()), ""},
		{"parentbased_always_on", "", sdktrace.ParentBased(sdktrace.AlwaysSample()), ""},
		{"always_on", "", sdktrace.AlwaysSample(), ""},
		{"always_off", "", sdktrace.NeverSample(), ""},
		{"parentbased_always_off", "", sdktrace.ParentBased(sdktrace.NeverSample()), ""},
		{"traceidratio", "", sdktrace.TraceIDRatioBased(1), ""},
		{"traceidratio", "0", sdktrace.TraceIDRatioBased(0), ""},
		{"parentbased_traceidratio", "0.25", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.25)), ""},
		{"traceidratio", "-0.1", nil, "OTEL_TRACES_SAMPLER_ARG"},
		{"traceidratio", "half", nil, "OTEL_TRACES_SAMPLER_ARG"},
		{"AlwaysOn", "", nil, "OTEL_TRACES_SAMPLER"},
		{"jaeger_remote", "", nil, "OTEL_TRACES_SAMPLER"},
	} {
		got, err := samplerFrom(tt.name, tt.arg)
		if tt.want == nil {
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr+" ") {
				t.Errorf("samplerFrom(%q, %q) = %v, %v; want an error about %s", tt.name, tt.arg, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got.Description() != tt.want.Description() {
			t.Errorf("samplerFrom(%q, %q) = %v, %v; want %s", tt.name, tt.arg, got, err, tt.want.Description())
		}
	}
}

// TestTracingFromEnv checks the settings that turn tracing on and off, and
// that off it adds nothing: the handler, transport and log handler given
// back are the ones given.
func TestTracingFromEnv(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct {
		vars map[string]string
		on   bool
	}{
		"no endpoint":        {vars: map[string]string{"OTEL_TRACES_SAMPLER": "not checked when off"}},
		"empty endpoint":     {vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ""}},
		"sdk disabled":       {vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}},
		"no traces exporter": {vars: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}},
		"http":               {vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true},
		"https, path":        {vars: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://collector.example/otlp/v1/traces"}, on: true},
		"grpc":               {vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, on: true},
		"sdk not false":      {vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "false"}, on: true},
	} {
		tr, err := TracingFromEnv(context.Background(), env(tt.vars), "test")
		if err != nil || tr.Enabled() != tt.on {
			t.Errorf("%s: TracingFromEnv = enabled %v, %v; want enabled %v", name, err == nil && tr.Enabled(), err, tt.on)
			continue
		}
		if tt.on {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = tr.Shutdown(ctx) // nothing buffered: nothing sent
			cancel()
			continue
		}
		h := &http.ServeMux{}
		if got := tr.Handler(h, nil); got != http.Handler(h) {
			t.Errorf("%s: Handler wraps its handler", name)
		}
		rt := &http.Transport{}
		if got := tr.Transport(rt); got != http.RoundTripper(rt) {
			t.Errorf("%s: Transport wraps its transport", name)
		}
		lh := slog.DiscardHandler
		if got := tr.LogHandler(lh); got != lh {
			t.Errorf("%s: LogHandler wraps its handler", name)
		}
		ctx, op := tr.StartOperation(context.Background())
		op.End("Name", "query", "OK", 1, 1, false) // must not panic
		if trace.SpanContextFromContext(ctx).IsValid() {
			t.Errorf("%s: an operation span when off", name)
		}
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Errorf("%s: Shutdown = %v", name, err)
		}
	}
}

// TestSpans checks the operation and upstream spans' names, attributes and
// statuses, outside the server.
func TestSpans(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tr := TracingTo(exp, sdktrace.AlwaysSample())
	ctx, op := tr.StartOperation(context.Background())
	_, done := tr.Upstream(ctx, upstream.Attempt{Op: "getBudget", Method: "GET", Route: "/v1/budgets/{id}", Number: 2})
	done(upstream.AttemptResult{Status: 503, RequestID: "req-1", Class: upstream.ClassServerError})
	op.End("", "", "UPSTREAM_UNAVAILABLE", 1, 2, false)

	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	client, opSpan := spans[0], spans[1]
	if client.Name != "GET /v1/budgets/{id}" || client.SpanKind != trace.SpanKindClient ||
		client.Parent.SpanID() != opSpan.SpanContext.SpanID() {
		t.Errorf("client span %q kind %v parent %v", client.Name, client.SpanKind, client.Parent.SpanID())
	}
	want := map[string]any{
		"http.request.method": "GET", "url.template": "/v1/budgets/{id}", "costgw.upstream.operation": "getBudget",
		"http.request.resend_count": int64(1), "http.response.status_code": int64(503),
		"costgw.upstream.request_id": "req-1", "error.type": "server_error",
	}
	if diff := cmp.Diff(want, attrMap(client.Attributes)); diff != "" {
		t.Errorf("client span attributes (-want +got):\n%s", diff)
	}
	if client.Status.Code != codes.Error {
		t.Errorf("client span status %v, want Error", client.Status)
	}
	// An anonymous operation, ended before its type was known: named by its
	// type alone, with no empty name (it was "unknown ", with one).
	if opSpan.Name != "unknown" || opSpan.Status.Code != codes.Error || opSpan.Status.Description != "UPSTREAM_UNAVAILABLE" {
		t.Errorf("operation span %q status %v", opSpan.Name, opSpan.Status)
	}
	attrs := attrMap(opSpan.Attributes)
	if got := attrs["graphql.operation.type"]; got != "unknown" {
		t.Errorf("operation type %v", got)
	}
	if got, ok := attrs["graphql.operation.name"]; ok {
		t.Errorf("an anonymous operation has the name %q", got)
	}
}

// TestCutOffSpan checks that an answer cut off while it was written ends its
// operation's span as an error, whatever the answer's code: the client did
// not get it.
func TestCutOffSpan(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tr := TracingTo(exp, sdktrace.AlwaysSample())
	_, op := tr.StartOperation(context.Background())
	op.End("Large", "query", "OK", 1, 1, true)
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	attrs := attrMap(s.Attributes)
	if s.Status.Code != codes.Error || !strings.Contains(s.Status.Description, "cut off") ||
		attrs["costgw.cut_off"] != true || attrs["costgw.code"] != "OK" {
		t.Errorf("span of a cut-off answer: status %v, attributes %v", s.Status, attrs)
	}
}

func attrMap(kvs []attribute.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.AsInterface()
	}
	return out
}

// TestTransport checks that the transport sets the traceparent of the span
// in the request's context, on a copy of the request.
func TestTransport(t *testing.T) {
	t.Parallel()
	tr := TracingTo(tracetest.NewInMemoryExporter(), sdktrace.AlwaysSample())
	var got http.Header
	rt := tr.Transport(roundTripper(func(r *http.Request) (*http.Response, error) {
		got = r.Header.Clone()
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
	}))
	ctx, op := tr.StartOperation(context.Background())
	defer op.End("N", "query", "OK", 0, 0, false)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://upstream.test/v1/budgets", nil)
	if _, err := rt.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	sc := trace.SpanContextFromContext(ctx)
	if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; got.Get("traceparent") != want {
		t.Errorf("traceparent %q, want %q", got.Get("traceparent"), want)
	}
	if req.Header.Get("traceparent") != "" {
		t.Errorf("the caller's request was changed")
	}
	// No span, no header.
	req, _ = http.NewRequest(http.MethodGet, "http://upstream.test/v1/budgets", nil)
	if _, err := rt.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if got.Get("traceparent") != "" {
		t.Errorf("traceparent %q without a span", got.Get("traceparent"))
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestLogHandler checks that lines logged with a span's context name it,
// through WithAttrs too, and other lines do not.
func TestLogHandler(t *testing.T) {
	t.Parallel()
	tr := TracingTo(tracetest.NewInMemoryExporter(), sdktrace.AlwaysSample())
	var buf bytes.Buffer
	log := slog.New(tr.LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	ctx, op := tr.StartOperation(context.Background())
	log.InfoContext(ctx, "in a span")
	op.End("N", "query", "OK", 0, 0, false)
	log.InfoContext(context.Background(), "outside")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	var in, out map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &out); err != nil {
		t.Fatal(err)
	}
	sc := trace.SpanContextFromContext(ctx)
	for k, want := range map[string]any{
		"trace_id": sc.TraceID().String(), "span_id": sc.SpanID().String(), "trace_sampled": "true", "component": "test",
	} {
		if in[k] != want {
			t.Errorf("line in a span: %s = %v, want %v", k, in[k], want)
		}
	}
	if _, ok := out["trace_id"]; ok {
		t.Errorf("line outside a span has a trace id: %v", out)
	}
}

// TestMetricLabels checks that the metrics' labels stay within their
// bounded sets whatever they are given.
func TestMetricLabels(t *testing.T) {
	t.Parallel()
	m := NewMetrics(func() int { return 2 })
	m.RequestStarted()("", "", time.Millisecond, false)
	m.RequestStarted()("query", "any text a client could make up", time.Millisecond, false)
	m.RequestStarted()("query", string(gqlcodes.MaxDepth), time.Millisecond, false)
	m.RequestStarted()("mutation", "OK", time.Millisecond, true) // cut off
	inFlight := m.RequestStarted()
	m.UpstreamAttempt(upstream.AttemptResult{Attempt: upstream.Attempt{Route: "/v1/budgets/{id}", Number: 2}, Class: upstream.ClassConnect})
	m.CacheLookup(true)
	m.RateLimited()
	m.Paced("keyless")
	m.Panic("resolver")

	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "costgw_") {
			continue
		}
		for _, s := range f.GetMetric() {
			var v float64
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				v = s.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v = s.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				v = float64(s.GetHistogram().GetSampleCount())
			}
			if v == 0 {
				continue
			}
			name := f.GetName()
			for _, l := range s.GetLabel() {
				name += " " + l.GetName() + "=" + l.GetValue()
			}
			got[name] = v
		}
	}
	want := map[string]float64{
		"costgw_graphql_requests_total operation_type=unknown code=NONE":          1,
		"costgw_graphql_requests_total operation_type=query code=UNREGISTERED":    1,
		"costgw_graphql_requests_total operation_type=query code=MAX_DEPTH_LIMIT": 1,
		"costgw_graphql_requests_total operation_type=mutation code=OK":           1,
		"costgw_graphql_answers_cut_off_total":                                    1,
		"costgw_graphql_request_duration_seconds operation_type=unknown":          1,
		"costgw_graphql_request_duration_seconds operation_type=query":            2,
		"costgw_graphql_request_duration_seconds operation_type=mutation":         1,
		"costgw_graphql_requests_in_flight":                                       1,
		"costgw_limit_rejections_total limit=depth":                               1,
		"costgw_upstream_calls_total route=/v1/budgets/{id} status=none":          1,
		"costgw_upstream_call_duration_seconds route=/v1/budgets/{id}":            1,
		"costgw_upstream_retries_total route=/v1/budgets/{id}":                    1,
		"costgw_query_cache_lookups_total result=hit":                             1,
		"costgw_rate_limit_rejections_total":                                      1,
		"costgw_callers_paced_total caller=keyless":                               1,
		"costgw_panics_total where=resolver":                                      1,
		"costgw_upstream_breakers_open":                                           2,
	}
	// Prometheus sorts a series' labels by name.
	want = sortLabels(want)
	if diff := cmp.Diff(want, sortLabels(got)); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	inFlight("query", "OK", time.Millisecond, false)
}

// sortLabels rewrites each "name k=v k=v" key with its labels sorted.
func sortLabels(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		parts := strings.Fields(k)
		slices.Sort(parts[1:])
		out[strings.Join(parts, " ")] = v
	}
	return out
}

// The counters whose label values are known ahead are there at 0 from the
// start, so that increase() and rate() see their first event: an alert on
// increase(costgw_panics_total[5m]) missed the first panic, whose series
// the panic itself created at 1.
func TestCountersStartAtZero(t *testing.T) {
	fams, err := NewMetrics(nil).Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			name := f.GetName()
			for _, l := range s.GetLabel() {
				name += " " + l.GetName() + "=" + l.GetValue()
			}
			got[name] = true
		}
	}
	for _, want := range []string{
		"costgw_panics_total where=resolver", "costgw_panics_total where=loader", "costgw_panics_total where=http",
		"costgw_query_cache_lookups_total result=hit", "costgw_query_cache_lookups_total result=miss",
		"costgw_limit_rejections_total limit=depth", "costgw_callers_paced_total caller=key",
		"costgw_rate_limit_rejections_total",
	} {
		if !got[want] {
			t.Errorf("a fresh registry has no series %s", want)
		}
	}
}
