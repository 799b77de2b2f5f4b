// Package telemetry is what an operator sees of the gateway besides its
// logs: Prometheus metrics (metrics.go) and OpenTelemetry traces
// (tracing.go). Both cost nothing when they are off.
package telemetry

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/upstream"
)

// Metrics are the gateway's Prometheus metrics, in a registry of their own
// with the Go runtime's and the process's. Every label has a bounded set of
// values: operation types, registered codes, route templates, HTTP
// statuses, limits; never an operation name from a client or an id.
type Metrics struct {
	Registry *prometheus.Registry

	requests   *prometheus.CounterVec
	cutOff     prometheus.Counter
	duration   *prometheus.HistogramVec
	inFlight   prometheus.Gauge
	upstream   *prometheus.CounterVec
	upDuration *prometheus.HistogramVec
	retries    *prometheus.CounterVec
	limits     *prometheus.CounterVec
	cache      *prometheus.CounterVec
	rateLimits prometheus.Counter
	paced      *prometheus.CounterVec
	panics     *prometheus.CounterVec
}

// latencyBuckets suit a gateway whose answers take milliseconds to seconds.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// NewMetrics registers the gateway's metrics; breakersOpen, when not nil,
// is read at each scrape for costgw_upstream_breakers_open.
func NewMetrics(breakersOpen func() int) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	// Each metric is registered in m.Registry as it is made.
	f := promauto.With(m.Registry)
	counter := func(name, help string) prometheus.Counter {
		return f.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	// counterBy is a counter by one label whose values are all known: each
	// is there at 0 from the start, so a rate() has a series.
	counterBy := func(name, help, label string, values ...string) *prometheus.CounterVec {
		c := counterVec(name, help, label)
		for _, v := range values {
			c.WithLabelValues(v)
		}
		return c
	}
	latency := func(name, help, label string) *prometheus.HistogramVec {
		return f.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBuckets}, []string{label})
	}

	m.requests = counterVec("costgw_graphql_requests_total",
		"GraphQL requests answered, by operation type (query, mutation, unknown) and code (OK, or the answer's first extensions.code).",
		"operation_type", "code")
	m.cutOff = counter("costgw_graphql_answers_cut_off_total",
		"GraphQL answers cut off while they were written: the client had not taken them in the time its request's deadline allows, or went away. Each is also counted by its code in costgw_graphql_requests_total.")
	m.duration = latency("costgw_graphql_request_duration_seconds",
		"Time to answer a GraphQL request, by operation type.", "operation_type")
	m.inFlight = f.NewGauge(prometheus.GaugeOpts{Name: "costgw_graphql_requests_in_flight", Help: "GraphQL requests being answered now."})
	m.upstream = counterVec("costgw_upstream_calls_total",
		"Upstream call attempts sent, by route template and HTTP status (none: no answer).", "route", "status")
	m.upDuration = latency("costgw_upstream_call_duration_seconds",
		"Time of one upstream call attempt, by route template.", "route")
	m.retries = counterVec("costgw_upstream_retries_total",
		"Upstream call attempts that were retries, by route template.", "route")
	m.limits = counterBy("costgw_limit_rejections_total",
		"Requests refused by a limit before any upstream call, by limit.", "limit", slices.Collect(maps.Values(limitCodes))...)
	m.cache = counterBy("costgw_query_cache_lookups_total",
		"Lookups of a request's document in the cache of parsed documents, by result (hit, miss).", "result", "hit", "miss")
	m.rateLimits = counter("costgw_rate_limit_rejections_total",
		"Requests refused because their API key (or all requests without a key together) was over -rate-limit.")
	m.paced = counterBy("costgw_callers_paced_total",
		"Times a caller ran out of its allowance of refused requests (-caller-refusals) and was paced, by caller kind (key, keyless, unaccepted).",
		"caller", "key", "keyless", "unaccepted")
	m.panics = counterBy("costgw_panics_total", "Panics recovered, by where (resolver, loader, http).", "where", "resolver", "loader", "http")
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if breakersOpen != nil {
		f.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "costgw_upstream_breakers_open",
			Help: "Circuit breakers refusing upstream calls now (the host's and the callers').",
		}, func() float64 { return float64(breakersOpen()) })
	}
	return m
}

// SetBuildInfo publishes costgw_build_info, 1 with the build's version,
// revision and Go version as labels: what a dashboard joins on to say which
// build each replica runs.
func (m *Metrics) SetBuildInfo(version, revision, goVersion string) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "costgw_build_info",
		Help:        "Always 1, with the running build's version, revision (the VCS commit, empty when unknown) and Go version as labels.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion},
	})
	g.Set(1)
	m.Registry.MustRegister(g)
}

// limitCodes name the limit each limit code stands for.
var limitCodes = map[codes.Code]string{
	codes.MaxTokens:       "tokens",
	codes.MaxSelections:   "selections",
	codes.MaxDepth:        "depth",
	codes.MaxAliases:      "aliases",
	codes.MaxRootFields:   "root_fields",
	codes.CostTooHigh:     "cost",
	codes.RequestTooLarge: "body",
}

// RequestStarted counts a GraphQL request in flight; the func it returns
// records its answer, and whether it was cut off while it was written.
func (m *Metrics) RequestStarted() func(opType, code string, d time.Duration, cutOff bool) {
	m.inFlight.Inc()
	return func(opType, code string, d time.Duration, cutOff bool) {
		m.inFlight.Dec()
		if opType == "" {
			opType = "unknown"
		}
		if code == "" {
			code = "NONE"
		} else if _, ok := codes.Code(code).Info(); !ok && code != "OK" {
			code = "UNREGISTERED" // keeps the label's values bounded
		}
		m.requests.WithLabelValues(opType, code).Inc()
		if cutOff {
			m.cutOff.Inc()
		}
		m.duration.WithLabelValues(opType).Observe(d.Seconds())
		if l, ok := limitCodes[codes.Code(code)]; ok {
			m.limits.WithLabelValues(l).Inc()
		}
	}
}

// UpstreamAttempt records one upstream call attempt.
func (m *Metrics) UpstreamAttempt(r upstream.AttemptResult) {
	status := "none"
	if r.Status != 0 {
		status = strconv.Itoa(r.Status)
	}
	m.upstream.WithLabelValues(r.Route, status).Inc()
	m.upDuration.WithLabelValues(r.Route).Observe(r.Duration.Seconds())
	if r.Number > 1 {
		m.retries.WithLabelValues(r.Route).Inc()
	}
}

// CacheLookup records a lookup of the cache of parsed documents.
func (m *Metrics) CacheLookup(hit bool) {
	if hit {
		m.cache.WithLabelValues("hit").Inc()
	} else {
		m.cache.WithLabelValues("miss").Inc()
	}
}

// RateLimited records a request refused by the rate limit.
func (m *Metrics) RateLimited() { m.rateLimits.Inc() }

// Paced counts a caller of the kind that was paced (graph.Options.OnPaced).
func (m *Metrics) Paced(kind string) { m.paced.WithLabelValues(kind).Inc() }

// Panic records a recovered panic.
func (m *Metrics) Panic(where string) { m.panics.WithLabelValues(where).Inc() }

// WatchCache registers the counters of the upstream answer cache, read at
// each scrape: lookups by operation and result (hit, miss, stale),
// evictions by operation and reason (write, size), and the bytes held by
// operation.
func (m *Metrics) WatchCache(stats func() map[string]upstream.CacheOpStats) {
	m.Registry.MustRegister(cacheCollector{stats})
}

var (
	cacheLookupsDesc = prometheus.NewDesc("costgw_upstream_cache_lookups_total",
		"Upstream reads looked up in the cache, by operation and result: hit (served, nothing sent), miss (sent), stale (the refresh failed; served past its TTL).",
		[]string{"operation", "result"}, nil)
	cacheEvictionsDesc = prometheus.NewDesc("costgw_upstream_cache_evictions_total",
		"Cache entries dropped before their time, by operation and reason: write (a write changed what they hold), size (the in-process bound).",
		[]string{"operation", "reason"}, nil)
	cacheBytesDesc = prometheus.NewDesc("costgw_upstream_cache_bytes",
		"Bytes the in-process cache holds, by operation.", []string{"operation"}, nil)
)

type cacheCollector struct {
	stats func() map[string]upstream.CacheOpStats
}

func (c cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cacheLookupsDesc
	ch <- cacheEvictionsDesc
	ch <- cacheBytesDesc
}

func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	for op, s := range c.stats() {
		for _, v := range []struct {
			d      *prometheus.Desc
			t      prometheus.ValueType
			n      int64
			labels []string
		}{
			{cacheLookupsDesc, prometheus.CounterValue, s.Hits, []string{op, "hit"}},
			{cacheLookupsDesc, prometheus.CounterValue, s.Misses, []string{op, "miss"}},
			{cacheLookupsDesc, prometheus.CounterValue, s.Stale, []string{op, "stale"}},
			{cacheEvictionsDesc, prometheus.CounterValue, s.EvictedByWrite, []string{op, "write"}},
			{cacheEvictionsDesc, prometheus.CounterValue, s.EvictedBySize, []string{op, "size"}},
			{cacheBytesDesc, prometheus.GaugeValue, s.Bytes, []string{op}},
		} {
			ch <- prometheus.MustNewConstMetric(v.d, v.t, float64(v.n), v.labels...)
		}
	}
}
