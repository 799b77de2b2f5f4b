package main

// The telemetry-overhead benchmark (issue 11, item 8): the gateway's CPU per
// request with its metrics on and scraped, and with tracing at 1 % and at
// 100 % sampling exporting over OTLP/HTTP, against everything off. Each
// configuration is a gateway process of its own on one simulator, and they
// take turns in rounds as the contenders of the throughput runs do
// (inTurns), in a balanced order (balancedOrder).

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Configuration names, the contenders of this benchmark.
const (
	ovOff      = "off"
	ovMetrics  = "metrics"
	ovTrace1   = "trace-1%"
	ovTrace100 = "trace-100%"
)

// goalTrace1VsOff is issue 11's bound: at 1 % sampling, with the metrics on,
// at most 5 % more CPU per request than with everything off.
const goalTrace1VsOff = 1.05

// overheadConfig is one way of running the gateway's telemetry.
type overheadConfig struct {
	Name string `json:"name"`
	What string `json:"what"`
	// Metrics turns on the admin listener (-admin-listen), whose /metrics
	// the harness scrapes.
	Metrics bool `json:"metrics"`
	// Sampler is OTEL_TRACES_SAMPLER, and SamplerArg its argument; tracing
	// is off when Sampler is empty, and otherwise exports to a sink of its
	// own (otlpSink).
	Sampler    string `json:"sampler,omitempty"`
	SamplerArg string `json:"sampler_arg,omitempty"`
}

var overheadConfigs = []overheadConfig{
	{Name: ovOff, What: "no `-admin-listen` and no `OTEL_` variable: no metrics, a no-op tracer"},
	{Name: ovMetrics, What: "`-admin-listen` on a loopback port, its `/metrics` scraped", Metrics: true},
	{Name: ovTrace1, What: "metrics as above, and traces: `OTEL_EXPORTER_OTLP_ENDPOINT` (http/protobuf) to a sink, " +
		"`OTEL_TRACES_SAMPLER=parentbased_traceidratio`, `OTEL_TRACES_SAMPLER_ARG=0.01`",
		Metrics: true, Sampler: "parentbased_traceidratio", SamplerArg: "0.01"},
	{Name: ovTrace100, What: "as trace-1%, with `OTEL_TRACES_SAMPLER=always_on`", Metrics: true, Sampler: "always_on"},
}

// env is the gateway's environment for the configuration: every OTEL_
// variable of the bench's own environment emptied (which the gateway and
// the SDK read as unset), then the configuration's, exporting to sinkURL.
func (oc overheadConfig) env(sinkURL string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			env = append(env, k+"=")
		}
	}
	if oc.Sampler != "" {
		env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+sinkURL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
			"OTEL_TRACES_SAMPLER="+oc.Sampler)
		if oc.SamplerArg != "" {
			env = append(env, "OTEL_TRACES_SAMPLER_ARG="+oc.SamplerArg)
		}
	}
	return env
}

// overheadReport is what the telemetry-overhead benchmark measured.
type overheadReport struct {
	runInfo
	LoadAvgStart   string           `json:"load_avg_start"`
	LoadAvgEnd     string           `json:"load_avg_end"`
	Clients        int              `json:"clients"`
	Warmup         time.Duration    `json:"warmup"`
	Duration       time.Duration    `json:"duration"` // of each configuration and query, over all rounds
	Rounds         int              `json:"rounds"`
	ScrapeInterval time.Duration    `json:"scrape_interval"`
	Queries        []string         `json:"queries"`
	Configs        []overheadConfig `json:"configs"`
	// Results are the rounds of each configuration merged; Contender is the
	// configuration's name.
	Results []result `json:"results"`
	// RoundCPU is the CPU-µs per request of each round, by query and
	// configuration: the spread between rounds shows what a ratio is worth.
	RoundCPU  map[string]map[string][]float64 `json:"round_cpu_us_per_request"`
	Telemetry []overheadTelemetry             `json:"telemetry"`
	Goals     []goalRow                       `json:"goals"`
}

// overheadTelemetry is what one configuration's telemetry did over the
// whole benchmark, warm-ups and checks included.
type overheadTelemetry struct {
	Config string `json:"config"`
	// Requests is every request the harness sent to the gateway.
	Requests         int64  `json:"requests_sent"`
	Scrapes          int    `json:"scrapes"`
	ScrapeErrors     int    `json:"scrape_errors"`
	FirstScrapeError string `json:"first_scrape_error,omitempty"`
	ScrapeBytes      int64  `json:"scrape_bytes"` // uncompressed
	// Exports are the OTLP requests the sink took, ExportBytes their bodies
	// as sent; Spans and RootSpans what they held (a root span is the
	// server span of a sampled request that came without a traceparent).
	Exports         int    `json:"exports"`
	ExportBytes     int64  `json:"export_bytes"`
	Spans           int64  `json:"spans"`
	RootSpans       int64  `json:"root_spans"`
	ExportErrors    int    `json:"export_errors"`
	FirstExportFail string `json:"first_export_error,omitempty"`
}

// find returns the result of a configuration on a query.
func (r *overheadReport) find(config, q string) (result, bool) {
	for _, x := range r.Results {
		if x.Contender == config && x.Query == q {
			return x, true
		}
	}
	return result{}, false
}

// cpuRatio is a configuration's CPU per request ÷ off's on a query.
func (r *overheadReport) cpuRatio(config, q string) (float64, bool) {
	x, ok1 := r.find(config, q)
	off, ok2 := r.find(ovOff, q)
	if !ok1 || !ok2 || x.Requests == 0 || off.Requests == 0 || off.CPUPerRequest() == 0 {
		return 0, false
	}
	return float64(x.CPUPerRequest()) / float64(off.CPUPerRequest()), true
}

// roundRatios are a configuration's CPU per request ÷ off's, round by
// round (the two measured one after the other).
func (r *overheadReport) roundRatios(config, q string) []float64 {
	x, off := r.RoundCPU[q][config], r.RoundCPU[q][ovOff]
	var out []float64
	for i := range min(len(x), len(off)) {
		if off[i] > 0 && x[i] > 0 {
			out = append(out, x[i]/off[i])
		}
	}
	return out
}

// ratioInterval is the geometric mean of round ratios and its 95 %
// interval (Student's t on the logarithms): the rounds are pairs measured
// one after the other, so this is how sure the run is of a ratio on a
// machine whose load moves. ok is false with fewer than two rounds.
func ratioInterval(rr []float64) (mean, lo, hi float64, ok bool) {
	n := len(rr)
	if n < 2 {
		return 0, 0, 0, false
	}
	var sum, sq float64
	for _, x := range rr {
		sum += math.Log(x)
	}
	m := sum / float64(n)
	for _, x := range rr {
		sq += (math.Log(x) - m) * (math.Log(x) - m)
	}
	half := tQuantile95(n-1) * math.Sqrt(sq/float64(n-1)/float64(n))
	return math.Exp(m), math.Exp(m - half), math.Exp(m + half), true
}

// tQuantile95 is Student's t for a two-sided 95 % interval with df degrees
// of freedom.
func tQuantile95(df int) float64 {
	table := []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	switch {
	case df < 1:
		return math.Inf(1)
	case df <= len(table):
		return table[df-1]
	case df <= 60:
		return 2.00
	}
	return 1.96
}

// intervalText is a configuration's rounds against off's in words: their
// geometric mean and its 95 % interval.
func (r *overheadReport) intervalText(config, q string) string {
	m, lo, hi, ok := ratioInterval(r.roundRatios(config, q))
	if !ok {
		return ""
	}
	return fmt.Sprintf("%.3f (%.3f – %.3f)", m, lo, hi)
}

// overheadGoals computes issue 11's goal line.
func overheadGoals(r *overheadReport) []goalRow {
	goal := fmt.Sprintf("CPU per request, trace-1%% ÷ off ≤ %.2f on every query (%s), %d clients", goalTrace1VsOff,
		strings.Join(r.Queries, ", "), r.Clients)
	var parts []string
	met, all := 0, 0
	for _, qn := range r.Queries {
		x, ok := r.cpuRatio(ovTrace1, qn)
		if !ok {
			continue
		}
		all++
		mark := ""
		if x <= goalTrace1VsOff {
			met++
		} else {
			mark = " ✗"
		}
		iv := ""
		if t := r.intervalText(ovTrace1, qn); t != "" {
			iv = "; rounds " + t
		}
		parts = append(parts, fmt.Sprintf("%s %.3f%s%s", qn, x, iv, mark))
	}
	if all == 0 {
		return []goalRow{notMeasured(goal, "no figures in this run")}
	}
	return []goalRow{{Goal: goal, Measured: fmt.Sprintf("%s (met by %d of %d)", strings.Join(parts, ", "), met, all), Met: met == all}}
}

// overheadProblems are what must hold of any run, a smoke run's above all:
// every configuration answered in its window, the metrics were scraped, the
// traces reached the sink.
func overheadProblems(r *overheadReport) []string {
	var out []string
	for _, x := range r.Results {
		if x.Requests == 0 {
			out = append(out, fmt.Sprintf("overhead: %s on %s: no request completed in the window", x.Query, x.Contender))
		}
		if x.Errors > 0 && r.Smoke {
			out = append(out, fmt.Sprintf("overhead: %s on %s: %d errors, first: %s", x.Query, x.Contender, x.Errors, x.FirstError))
		}
	}
	for _, t := range r.Telemetry {
		oc := overheadConfigByName(t.Config)
		if oc == nil {
			continue
		}
		// A scrape may time out on a loaded machine (the table shows it);
		// none answered, or any failure in a smoke run, is a fault.
		if oc.Metrics && (t.Scrapes == t.ScrapeErrors || (r.Smoke && t.ScrapeErrors > 0)) {
			out = append(out, fmt.Sprintf("overhead: %s: %d scrapes of /metrics, %d failed (first: %s)", t.Config, t.Scrapes,
				t.ScrapeErrors, t.FirstScrapeError))
		}
		if t.ExportErrors > 0 {
			out = append(out, fmt.Sprintf("overhead: %s: %d OTLP requests the sink could not read (first: %s)", t.Config,
				t.ExportErrors, t.FirstExportFail))
		}
		if oc.Sampler == "always_on" && t.RootSpans == 0 {
			out = append(out, fmt.Sprintf("overhead: %s: the sink received no trace", t.Config))
		}
	}
	return out
}

func overheadConfigByName(name string) *overheadConfig {
	for i := range overheadConfigs {
		if overheadConfigs[i].Name == name {
			return &overheadConfigs[i]
		}
	}
	return nil
}

// overheadGateway is one configuration's gateway and what observes it.
type overheadGateway struct {
	oc    overheadConfig
	proc  *proc
	c     *counted
	admin string // the admin listener's address, when on
	sink  *otlpSink
	scr   *scraper
}

// runOverhead runs the telemetry-overhead benchmark on a simulator of its
// own, with no added latency.
func runOverhead(ctx context.Context, cfg config, b binaries) (*overheadReport, error) {
	rep := &overheadReport{runInfo: startRun(cfg), LoadAvgStart: loadAvg(),
		Clients: cfg.overheadClients, Warmup: cfg.warmup, Duration: cfg.overheadDuration, Rounds: cfg.overheadRounds,
		ScrapeInterval: cfg.overheadScrape, Queries: cfg.overheadQueries, Configs: overheadConfigs,
		RoundCPU: map[string]map[string][]float64{}}
	costsim, err := startSeededSim(ctx, b, 0)
	if err != nil {
		return nil, err
	}
	defer costsim.stop()

	var gws []*overheadGateway
	scrapeCtx, stopScraping := context.WithCancel(ctx)
	stop := func() {
		stopScraping()
		for _, g := range gws {
			if g.scr != nil {
				<-g.scr.done
			}
		}
		// SIGTERM: a traced gateway sends the spans it still holds as it
		// ends, so the sinks close after the gateways.
		for _, g := range gws {
			g.proc.stop()
		}
		for _, g := range gws {
			g.sink.close()
		}
	}
	defer stop()
	for _, oc := range overheadConfigs {
		g := &overheadGateway{oc: oc}
		sinkURL := ""
		if oc.Sampler != "" {
			if g.sink, err = startSink(); err != nil {
				return nil, err
			}
			sinkURL = g.sink.url
		}
		if oc.Metrics {
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			g.admin = fmt.Sprintf("127.0.0.1:%d", port)
		}
		var url string
		if g.proc, url, err = startGatewayAdmin(ctx, "gateway "+oc.Name, b.gateway, costsim.url, g.admin, oc.env(sinkURL)); err != nil {
			g.sink.close()
			return nil, fmt.Errorf("the gateway with telemetry %s: %w", oc.Name, err)
		}
		gws = append(gws, g)
		c, err := newGraphQL(oc.Name, url, g.proc.pid(), false, costsim.fx)
		if err != nil {
			return nil, err
		}
		g.c = &counted{contender: c}
	}
	var contenders []contender
	for _, g := range gws {
		for _, qn := range cfg.overheadQueries {
			if _, err := answerOnce(ctx, g.c, queryByName(qn)); err != nil {
				return nil, fmt.Errorf("%s on the gateway with telemetry %s: %w", qn, g.oc.Name, err)
			}
		}
		if g.admin != "" {
			g.scr = scrape(scrapeCtx, "http://"+g.admin+"/metrics", cfg.overheadScrape)
		}
		contenders = append(contenders, g.c)
	}

	for _, qn := range cfg.overheadQueries {
		q := queryByName(qn)
		merged, rounds := inTurns(ctx, contenders, cfg.overheadRounds, balancedOrder, loadSpec{q: q, concurrency: cfg.overheadClients,
			warmup: cfg.warmup, duration: cfg.overheadDuration, simPid: costsim.proc.pid()}, func() { _ = costsim.log.Truncate(0) })
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rep.Results = append(rep.Results, merged...)
		rep.RoundCPU[qn] = map[string][]float64{}
		for name, rs := range rounds {
			for _, r := range rs {
				rep.RoundCPU[qn][name] = append(rep.RoundCPU[qn][name], r.CPUPerRequestUS)
			}
		}
		for _, r := range merged {
			x, _ := rep.cpuRatio(r.Contender, qn)
			rr := rep.roundRatios(r.Contender, qn)
			logf("%-16s %-10s c=%-3d %8.1f req/s %8.0f CPU-µs/req  ÷ off %.3f, rounds %s, median %.3f (%s)  p50 %-9v p95 %-9v errors %d",
				qn, r.Contender, r.Concurrency, r.RPS(), us(r.CPUPerRequest()), x, rep.intervalText(r.Contender, qn), median(rr), ratioList(rr),
				r.P50.Round(10*time.Microsecond), r.P95.Round(10*time.Microsecond), r.Errors)
			if r.Errors > 0 && !cfg.smoke {
				logf("WARN %s on %s: %d errors, first: %s", qn, r.Contender, r.Errors, r.FirstError)
			}
		}
	}

	stop()
	for _, g := range gws {
		t := overheadTelemetry{Config: g.oc.Name, Requests: g.c.sent.Load()}
		if g.scr != nil {
			t.Scrapes, t.ScrapeErrors, t.FirstScrapeError, t.ScrapeBytes = g.scr.n, g.scr.errs, g.scr.firstErr, g.scr.bytes
		}
		if g.sink != nil {
			g.sink.count(&t)
		}
		rep.Telemetry = append(rep.Telemetry, t)
		logf("telemetry %-10s %d requests sent, %d scrapes (%d failed), %d OTLP requests, %d spans, %d sampled requests",
			t.Config, t.Requests, t.Scrapes, t.ScrapeErrors, t.Exports, t.Spans, t.RootSpans)
	}
	rep.Finished, rep.LoadAvgEnd = time.Now(), loadAvg()
	rep.Goals = overheadGoals(rep)
	for _, g := range rep.Goals {
		logf("goal: %s: %s: %s", g.Goal, g.Measured, g.verdict())
	}
	return rep, nil
}

func ratioList(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.3f", x)
	}
	return strings.Join(s, " ")
}

// loadAvg is the machine's load average over 1, 5 and 15 minutes.
func loadAvg() string {
	v, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(v))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// counted is a contender that counts the requests sent to it.
type counted struct {
	contender
	sent atomic.Int64
}

func (c *counted) do(ctx context.Context, q *query, buf *bytes.Buffer) error {
	c.sent.Add(1)
	return c.contender.do(ctx, q, buf)
}

// otlpSink is the least an OpenTelemetry collector does over OTLP/HTTP: it
// takes POST /v1/traces (protobuf, gzipped or not), counts the spans, and
// answers 200 with an empty ExportTraceServiceResponse. It runs in the bench
// process: what it costs is the bench's CPU, in no gateway's figure.
type otlpSink struct {
	srv *http.Server
	url string // the base URL: OTEL_EXPORTER_OTLP_ENDPOINT

	mu                  sync.Mutex
	exports, errs       int
	bytes, spans, roots int64
	firstErr            string
}

func startSink() (*otlpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &otlpSink{url: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", s.traces)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// count adds what the sink received to t.
func (s *otlpSink) count(t *overheadTelemetry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Exports, t.ExportBytes, t.Spans, t.RootSpans = s.exports, s.bytes, s.spans, s.roots
	t.ExportErrors, t.FirstExportFail = s.errs, s.firstErr
}

func (s *otlpSink) close() {
	if s != nil {
		_ = s.srv.Close()
	}
}

func (s *otlpSink) traces(w http.ResponseWriter, r *http.Request) {
	wire := &countingReader{r: r.Body}
	var body io.Reader = wire
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(wire)
		if err != nil {
			s.fail(w, err)
			return
		}
		defer zr.Close()
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		s.fail(w, err)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		s.fail(w, err)
		return
	}
	var spans, roots int64
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				spans++
				// A request's server span without a parent: the gateway's
				// own roots (the upstream probe at its start) are not requests.
				if len(sp.ParentSpanId) == 0 && sp.Kind == tracepb.Span_SPAN_KIND_SERVER {
					roots++
				}
			}
		}
	}
	s.mu.Lock()
	s.exports++
	s.bytes += wire.n
	s.spans += spans
	s.roots += roots
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse is no bytes
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (s *otlpSink) fail(w http.ResponseWriter, err error) {
	s.mu.Lock()
	s.errs++
	if s.firstErr == "" {
		s.firstErr = err.Error()
	}
	s.mu.Unlock()
	http.Error(w, err.Error(), http.StatusBadRequest)
}

// scraper GETs a gateway's /metrics every interval as Prometheus does (its
// Accept header, gzip), from its start until its context ends.
type scraper struct {
	done chan struct{}
	// Read once done is closed.
	n, errs  int
	bytes    int64
	firstErr string
}

// promAccept is the Accept header of a Prometheus scrape.
const promAccept = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4," +
	"text/plain;version=0.0.4;q=0.3,*/*;q=0.2"

func scrape(ctx context.Context, url string, every time.Duration) *scraper {
	s := &scraper{done: make(chan struct{})}
	// The default transport asks for gzip and decompresses, as Prometheus does.
	hc := &http.Client{Timeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		defer hc.CloseIdleConnections()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			n, err := scrapeOnce(ctx, hc, url)
			if ctx.Err() != nil {
				return
			}
			s.n++
			s.bytes += n
			if err != nil {
				s.errs++
				if s.firstErr == "" {
					s.firstErr = err.Error()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func scrapeOnce(ctx context.Context, hc *http.Client, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", promAccept)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	if err == nil && n == 0 {
		err = errors.New("empty answer")
	}
	return n, err
}
