package main

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The sink takes what the SDK's own OTLP/HTTP exporter sends, the way the
// gateway sends it, plain and gzipped, answers so that the exporter reports
// no error, and counts the spans and the requests' server spans.
func TestSinkTakesTheOTLPExporter(t *testing.T) {
	for _, gz := range []bool{false, true} {
		s, err := startSink()
		if err != nil {
			t.Fatal(err)
		}
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(s.url + "/v1/traces")}
		if gz {
			opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		}
		ctx := context.Background()
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		tr := tp.Tracer("test")
		for range 3 {
			rctx, req := tr.Start(ctx, "POST /graphql", trace.WithSpanKind(trace.SpanKindServer))
			_, op := tr.Start(rctx, "query Q")
			_, call := tr.Start(rctx, "GET /v1/budgets", trace.WithSpanKind(trace.SpanKindClient))
			call.End()
			op.End()
			req.End()
		}
		// A root that is not a request's server span (the upstream probe).
		_, probe := tr.Start(ctx, "GET /v1/budgets", trace.WithSpanKind(trace.SpanKindClient))
		probe.End()
		if err := tp.ForceFlush(ctx); err != nil {
			t.Fatalf("gzip %v: the exporter: %v", gz, err)
		}
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		s.close()
		var got overheadTelemetry
		s.count(&got)
		if got.Exports == 0 || got.Spans != 10 || got.RootSpans != 3 || got.ExportErrors != 0 || got.ExportBytes <= 0 {
			t.Errorf("gzip %v: %d exports (%d bytes), %d spans, %d requests, %d errors (%s); want 10 spans, 3 requests, no error",
				gz, got.Exports, got.ExportBytes, got.Spans, got.RootSpans, got.ExportErrors, got.FirstExportFail)
		}
	}
}

// A configuration's gateway sees none of the bench's own OTEL_ variables,
// only its own.
func TestOverheadConfigEnv(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-token=secret")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	last := func(env []string, k string) (string, bool) {
		v, ok := "", false
		for _, kv := range env {
			if name, val, _ := strings.Cut(kv, "="); name == k {
				v, ok = val, true
			}
		}
		return v, ok
	}
	off := overheadConfigByName(ovOff).env("")
	for _, k := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_TRACES_SAMPLER"} {
		if v, ok := last(off, k); !ok || v != "" {
			t.Errorf("off: %s=%q, want it emptied", k, v)
		}
	}
	if v, ok := last(off, "OTEL_EXPORTER_OTLP_ENDPOINT"); ok && v != "" {
		t.Errorf("off: an endpoint %q", v)
	}
	tr := overheadConfigByName(ovTrace1).env("http://127.0.0.1:9")
	for k, want := range map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG": "0.01", "OTEL_EXPORTER_OTLP_HEADERS": ""} {
		if v, _ := last(tr, k); v != want {
			t.Errorf("trace-1%%: %s=%q, want %q", k, v, want)
		}
	}
}

// overheadFixture is a run of two queries with off's CPU per request 1 ms
// and each configuration's given as a multiple of it, in two rounds.
func overheadFixture(factor map[string][2]float64) *overheadReport {
	r := &overheadReport{Queries: []string{"BudgetList", "Dashboard"}, Clients: 50, Configs: overheadConfigs,
		RoundCPU: map[string]map[string][]float64{}}
	for _, qn := range r.Queries {
		r.RoundCPU[qn] = map[string][]float64{}
		for _, c := range overheadConfigs {
			f := factor[c.Name]
			if c.Name == ovOff {
				f = [2]float64{1, 1}
			}
			r.RoundCPU[qn][c.Name] = []float64{1000 * f[0], 1000 * f[1]}
			cpu := time.Duration(1000*(f[0]+f[1])) * time.Microsecond
			res := result{Contender: c.Name, Query: qn, Concurrency: 50, Requests: 2000, Elapsed: 4 * time.Second, CPU: cpu * 1000}
			res.derive()
			r.Results = append(r.Results, res)
		}
	}
	return r
}

func TestOverheadGoal(t *testing.T) {
	for _, tc := range []struct {
		trace1 [2]float64
		met    bool
		want   string
	}{
		{[2]float64{1.02, 1.04}, true, "BudgetList 1.030; rounds 1.030 (0.910 – 1.165), Dashboard 1.030; rounds 1.030 (0.910 – 1.165) (met by 2 of 2)"},
		{[2]float64{1.05, 1.05}, true, "BudgetList 1.050; rounds 1.050 (1.050 – 1.050), Dashboard 1.050; rounds 1.050 (1.050 – 1.050) (met by 2 of 2)"},
		{[2]float64{1.04, 1.08}, false, "BudgetList 1.060; rounds 1.060 (0.834 – 1.347) ✗, Dashboard 1.060; rounds 1.060 (0.834 – 1.347) ✗ (met by 0 of 2)"},
	} {
		r := overheadFixture(map[string][2]float64{ovMetrics: {1.01, 1.01}, ovTrace1: tc.trace1, ovTrace100: {1.5, 1.7}})
		g := overheadGoals(r)
		if len(g) != 1 || g[0].Met != tc.met || g[0].Measured != tc.want {
			t.Errorf("trace-1%% at %v: %+v, want met %v, %q", tc.trace1, g, tc.met, tc.want)
		}
		if rr := r.roundRatios(ovTrace1, "Dashboard"); !slices.Equal(rr, []float64{tc.trace1[0], tc.trace1[1]}) {
			t.Errorf("round ratios %v, want %v", rr, tc.trace1)
		}
	}
	if g := overheadGoals(&overheadReport{Queries: []string{"BudgetList"}}); len(g) != 1 || !g[0].NotMeasured {
		t.Errorf("no figures: %+v, want not measured", g)
	}
}

// A run whose telemetry did nothing is a failed run: no scrape, or no trace
// at 100 % sampling.
func TestOverheadProblems(t *testing.T) {
	r := overheadFixture(map[string][2]float64{ovMetrics: {1, 1}, ovTrace1: {1, 1}, ovTrace100: {1, 1}})
	r.Telemetry = []overheadTelemetry{{Config: ovOff}, {Config: ovMetrics, Scrapes: 3}, {Config: ovTrace1, Scrapes: 3},
		{Config: ovTrace100, Scrapes: 3, Spans: 30, RootSpans: 10}}
	if p := overheadProblems(r); len(p) != 0 {
		t.Errorf("problems %q, want none", p)
	}
	r.Telemetry[2].ScrapeErrors = 1 // one of three timed out
	if p := overheadProblems(r); len(p) != 0 {
		t.Errorf("problems %q, want none for one failed scrape of three", p)
	}
	r.Smoke = true
	if p := overheadProblems(r); len(p) != 1 {
		t.Errorf("smoke: problems %q, want the failed scrape", p)
	}
	r.Smoke = false
	r.Telemetry[1].Scrapes = 0
	r.Telemetry[3].RootSpans = 0
	if p := overheadProblems(r); len(p) != 2 {
		t.Errorf("problems %q, want the metrics' scrapes and trace-100%%'s traces", p)
	}
}

// The section is in the report, with its goal, whether the report has the
// other sections or not.
func TestOverheadSectionRendered(t *testing.T) {
	o := overheadFixture(map[string][2]float64{ovMetrics: {1.01, 1.01}, ovTrace1: {1.02, 1.02}, ovTrace100: {1.5, 1.7}})
	o.Goals = overheadGoals(o)
	o.Telemetry = []overheadTelemetry{{Config: ovOff, Requests: 100}, {Config: ovTrace1, Requests: 100, Scrapes: 2, Exports: 1, Spans: 6, RootSpans: 1}}
	full := goalReport(map[string]time.Duration{nameGateway: 100, nameDirect: 80, nameFloor: 90, nameMesh: 400},
		map[string]int{nameGateway: 90, nameDirect: 100, nameFloor: 100, nameMesh: 30}, 50<<20)
	full.Overhead = o
	for name, r := range map[string]*report{"full": full, "alone": {Overhead: o}} {
		md := renderReport(r)
		for _, want := range []string{"## Telemetry overhead (issue 11)",
			"| CPU per request, trace-1% ÷ off ≤ 1.05 on every query (BudgetList, Dashboard), 50 clients | BudgetList 1.020; rounds 1.020 (1.020 – 1.020), Dashboard 1.020; rounds 1.020 (1.020 – 1.020) (met by 2 of 2) | met |",
			"| Dashboard | trace-100% | 1600 | 1.600 | 1.597 (0.721 – 3.537) | 1.600 | 1.500 – 1.700 |",
			"| trace-1% | 100 | 2 (0) | 1 | 0.00 MiB | 6 | 1 | 0.0100 |"} {
			if !strings.Contains(md, want) {
				t.Errorf("%s: the report has no %q", name, want)
			}
		}
	}
	if md := renderReport(full); !strings.Contains(md, "(#telemetry-overhead-issue-11)") {
		t.Error("the goals of issue 13 do not point at the telemetry overhead")
	}
}

// The interval of the round ratios: a geometric mean, and an interval that
// narrows with more rounds alike and widens with rounds that differ.
func TestRatioInterval(t *testing.T) {
	if _, _, _, ok := ratioInterval([]float64{1.1}); ok {
		t.Error("an interval from one round")
	}
	m, lo, hi, _ := ratioInterval([]float64{1, 1.21})
	if math.Abs(m-1.1) > 1e-9 || lo >= m || hi <= m {
		t.Errorf("1 and 1.21: %v (%v – %v), want 1.1 inside its interval", m, lo, hi)
	}
	few := []float64{0.95, 1.05, 1.0, 1.1}
	many := append(append(append([]float64{}, few...), few...), few...)
	_, lo1, hi1, _ := ratioInterval(few)
	_, lo2, hi2, _ := ratioInterval(many)
	if hi2-lo2 >= hi1-lo1 {
		t.Errorf("12 rounds give %v – %v, no narrower than 4 rounds' %v – %v", lo2, hi2, lo1, hi1)
	}
}

// The overhead's turns are balanced: over n rounds (2n for odd n) each
// contender runs once in each position and once right after each other one.
// For two, it is the throughput runs' order, reversed every other round.
func TestBalancedOrder(t *testing.T) {
	for n := 1; n <= 6; n++ {
		rows := n
		if n%2 == 1 {
			rows = 2 * n
		}
		pos := map[[2]int]int{}
		follows := map[[2]int]int{}
		for r := range rows {
			o := balancedOrder(r, n)
			if s := slices.Sorted(slices.Values(o)); !slices.Equal(s, reverseEveryOther(0, n)) {
				t.Fatalf("n=%d round %d: %v is not a permutation", n, r, o)
			}
			for j, c := range o {
				pos[[2]int{c, j}]++
				if j > 0 {
					follows[[2]int{o[j-1], c}]++
				}
			}
		}
		for c := range n {
			for j := range n {
				if pos[[2]int{c, j}] != rows/n {
					t.Errorf("n=%d: contender %d in position %d %d times over %d rounds", n, c, j, pos[[2]int{c, j}], rows)
				}
				if c != j && follows[[2]int{c, j}] != rows/n {
					t.Errorf("n=%d: %d right after %d %d times over %d rounds", n, j, c, follows[[2]int{c, j}], rows)
				}
			}
		}
	}
	for r := range 4 {
		if !slices.Equal(balancedOrder(r, 2), reverseEveryOther(r, 2)) {
			t.Errorf("round %d of two: %v, want %v", r, balancedOrder(r, 2), reverseEveryOther(r, 2))
		}
	}
	if got := reverseEveryOther(1, 4); !slices.Equal(got, []int{3, 2, 1, 0}) {
		t.Errorf("reverseEveryOther(1, 4) = %v", got)
	}
}
