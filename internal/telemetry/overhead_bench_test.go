package telemetry

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/costgw/gateway/upstream"
)

// What the telemetry adds to one request, in process: the server span's
// middleware, the operation's span, one upstream attempt's span, and the
// traceparent on the upstream request (Inject, as the upstream client calls
// it), around a handler that does nothing else; and the metrics of a
// request and of one attempt. The bench's
// telemetry-overhead benchmark (bench/overhead.go) measures the same in the
// real gateway under load; this tells its parts apart.
//
//	go test -run '^$' -bench . -benchmem ./internal/telemetry
//
// Besides ns/op, cpu-ns/op is the process's CPU time (getrusage) per
// request, which a shared machine disturbs less than the wall clock.

// discardRT answers every upstream request at once.
type discardRT struct{}

func (discardRT) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

func BenchmarkRequestTracing(b *testing.B) {
	for _, tc := range []struct {
		name string
		t    func() *Tracing
	}{
		{"off", Off},
		{"unsampled", func() *Tracing {
			return TracingTo(tracetest.NewNoopExporter(), sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0)))
		}},
		{"sampled", func() *Tracing { return TracingTo(tracetest.NewNoopExporter(), sdktrace.AlwaysSample()) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			t := tc.t()
			rt := discardRT{}
			h := t.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				ctx, op := t.StartOperation(r.Context())
				// As the server's observer does: no span at all with tracing off.
				actx, done := ctx, func(upstream.AttemptResult) {}
				if t.Enabled() {
					actx, done = t.Upstream(ctx, upstream.Attempt{Op: "listBudgets", Method: http.MethodGet, Route: "/v1/budgets", Number: 1})
				}
				req, _ := http.NewRequestWithContext(actx, http.MethodGet, "http://127.0.0.1:1/v1/budgets?limit=50", nil)
				req.Header.Set("Authorization", "Bearer key")
				req.Header.Set("Accept", "application/json")
				req.Header.Set("Idempotency-Key", "b6f0c7a4")
				if t.Enabled() {
					t.Inject(actx, headerMap(req.Header))
				}
				if resp, err := rt.RoundTrip(req); err == nil {
					resp.Body.Close()
				}
				if done != nil {
					done(upstream.AttemptResult{Status: http.StatusOK, RequestID: "req_1", Class: upstream.ClassOK})
				}
				op.End("BudgetList", "query", "OK", 1, 1, false)
				_, _ = w.Write([]byte(`{"data":{}}`))
			}), nil)
			body := `{"query":"query BudgetList { budgets { nodes { id } } }"}`
			cpuPerOp(b, func() {
				r := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Authorization", "Bearer key")
				h.ServeHTTP(httptest.NewRecorder(), r)
			})
		})
	}
}

func BenchmarkRequestMetrics(b *testing.B) {
	m := NewMetrics(func() int { return 0 })
	cpuPerOp(b, func() {
		done := m.RequestStarted()
		m.UpstreamAttempt(upstream.AttemptResult{Attempt: upstream.Attempt{Op: "listBudgets", Method: http.MethodGet,
			Route: "/v1/budgets", Number: 1}, Status: http.StatusOK, Duration: time.Millisecond})
		done("query", "OK", 2*time.Millisecond, false)
	})
}

// cpuPerOp runs op in b's loop and reports, besides b's own figures, the
// process's CPU time per op.
func cpuPerOp(b *testing.B, op func()) {
	b.ReportAllocs()
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	for b.Loop() {
		op()
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
