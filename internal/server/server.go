// Package server is the costgw command: its configuration, the routes and
// middleware chain in front of the GraphQL endpoint, the health endpoints,
// and serving until a signal. The module root's main only calls Run.
package server

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/internal/httpx"
	"github.com/costgw/gateway/internal/sharedstate"
	"github.com/costgw/gateway/internal/telemetry"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
	"github.com/costgw/gateway/web/playground"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"golang.org/x/term"
)

// Run serves until ctx ends, or runs the action a flag asks for. If ready is
// not nil it receives the address the gateway listens on once it serves.
func Run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer, ready chan<- string) error {
	cfg, err := ParseConfig(args, lookupEnv, stderr)
	if err != nil {
		return err
	}
	switch {
	case cfg.Version:
		_, err := fmt.Fprintln(stdout, readBuildInfo())
		return err
	case cfg.HealthCheck:
		// The health endpoints are on the admin listener when there is one.
		return healthCheck(ctx, cmp.Or(cfg.AdminListen, cfg.Listen))
	}
	tracing, err := telemetry.TracingFromEnv(ctx, lookupEnv, readBuildInfo().Version)
	if err != nil {
		return err
	}
	defer func() {
		// Send the spans still buffered, once the requests in flight are done.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tracing.Shutdown(sctx)
	}()
	log := newLogger(cfg, stderr)
	if tracing.Enabled() {
		// OpenTelemetry reports what fails in the background (an export the
		// collector refused or did not take) through its error handler,
		// which writes plain text with Go's log package unless told
		// otherwise: it goes to the gateway's own log instead, as its lines do.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			log.Warn("tracing: OpenTelemetry reported an error", "error", err.Error())
		}))
	}
	return serve(ctx, cfg, tracing, log, ready, setGC(cfg, lookupEnv))
}

// newLogger returns the logger of cfg's level and format; the format auto is
// text when w is a terminal, for a person, and JSON otherwise, for a
// collector.
func newLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" || cfg.LogFormat == "auto" && isTerminal(w) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// serve runs the gateway, tracing with tracing, until ctx ends, then stops
// accepting connections, lets the requests in flight finish and returns.
// Its caller shuts tracing down. The first lines it logs say where the
// gateway serves (and, on the simulator, which key to send); then each of
// later logs its line.
func serve(ctx context.Context, cfg Config, tracing *telemetry.Tracing, log *slog.Logger, ready chan<- string, later ...func(*slog.Logger)) error {
	// Listen first: a busy port fails before anything says the gateway runs.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", cfg.Listen, err)
	}
	defer ln.Close()
	var adminLn net.Listener
	if cfg.AdminListen != "" {
		if adminLn, err = net.Listen("tcp", cfg.AdminListen); err != nil {
			return fmt.Errorf("-admin-listen %q: %w", cfg.AdminListen, err)
		}
		defer adminLn.Close()
	}

	log = slog.New(tracing.LogHandler(log.Handler()))

	onSimulator := cfg.Upstream == ""
	upstreamURL := cfg.Upstream
	if onSimulator {
		// The simulator is served on a loopback port of its own, so the
		// gateway talks to it over real HTTP exactly as to the real API. It is
		// closed after the gateway has drained, so requests in flight finish.
		simLn, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("the built-in simulator: %w", err)
		}
		simSrv := &http.Server{Handler: sim.New(sim.Options{}), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = simSrv.Serve(simLn) }()
		defer simSrv.Close()
		upstreamURL = "http://" + simLn.Addr().String()
	}

	// Shared state: in Redis when -redis-url is set, else in memory.
	var apqStore graphql.Cache[string]
	var limiter sharedstate.Limiter
	var sharedCache upstream.SharedCache
	if cfg.RedisURL != "" {
		rdb, err := sharedstate.Open(ctx, cfg.RedisURL)
		if err != nil {
			return fmt.Errorf("-redis-url: %w", err)
		}
		defer rdb.Close()
		apqStore = sharedstate.NewAPQ(rdb, log)
		if cfg.RateLimit > 0 {
			limiter = sharedstate.NewRedisLimiter(rdb, cfg.RateLimit, log)
		}
		sharedCache = sharedstate.NewCache(rdb, log)
	} else if cfg.RateLimit > 0 {
		limiter = sharedstate.NewMemoryLimiter(cfg.RateLimit)
	}

	inst := &instruments{tracing: tracing}
	base := upstream.NewTransport()
	base.ResponseHeaderTimeout = cfg.UpstreamTimeout
	// The traceparent goes on through the client, not a RoundTripper around
	// base: with any other transport than its own, net/http starts a timer
	// and a goroutine for every upstream request (tracing.Transport).
	opts := []upstream.Option{
		upstream.WithHTTPClient(&http.Client{Transport: base, Timeout: cfg.UpstreamTimeout}),
		upstream.WithMaxInFlight(cfg.UpstreamInFlight),
		upstream.WithObserver(inst.observe),
		upstream.WithLogger(log),
	}
	if tracing.Enabled() {
		opts = append(opts, upstream.WithRequestHeaders(tracing.Inject))
	}
	var cache *upstream.Cache
	if cfg.Cache {
		if cache, err = upstream.NewCache(upstream.CacheConfig{TTL: cfg.CacheTTL, StaleIfError: cfg.CacheStaleIfError,
			MaxBytes: cfg.CacheMaxBytes, KeyRecheck: cfg.KeyRecheck, Shared: sharedCache, Logger: log}); err != nil {
			return err
		}
		opts = append(opts, upstream.WithCache(cache))
	}
	client, err := upstream.NewClient(upstreamURL, opts...)
	if err != nil {
		return err
	}
	if adminLn != nil {
		inst.metrics = telemetry.NewMetrics(client.BreakersOpen)
		bi := readBuildInfo()
		inst.metrics.SetBuildInfo(bi.Version, bi.Revision, bi.Go)
		if cache != nil {
			inst.metrics.WatchCache(cache.Stats)
		}
	}
	readyz := newReadiness(client.Ping, min(readinessTimeout, cfg.UpstreamTimeout), log)

	var trusted graph.Manifest
	if cfg.PersistedDocuments != "" {
		if trusted, err = graph.ReadManifest(cfg.PersistedDocuments); err != nil {
			return fmt.Errorf("-persisted-documents: %w", err)
		}
		log.Info("trusted documents", "file", cfg.PersistedDocuments, "documents", len(trusted), "only_persisted", cfg.OnlyPersisted)
	}

	gopts := graph.Options{
		Client:           client,
		CursorSecret:     []byte(cfg.CursorSecret),
		Introspection:    cfg.Introspection,
		Logger:           log,
		Limits:           &cfg.Limits,
		MaxBodyBytes:     cfg.MaxBodyBytes,
		Loaders:          loaders.Options{MaxConcurrency: cfg.RequestFanout},
		PersistedQueries: apqStore,
		TrustedDocuments: trusted,
		OnlyPersisted:    cfg.OnlyPersisted,
		CallerInFlight:   cfg.CallerInFlight,
		InFlight:         cfg.RequestsInFlight,
		CallerRefusals:   cfg.CallerRefusals,
		RequestTimeout:   cfg.RequestTimeout,
		Overdue:          new(atomic.Int64),
	}
	if inst.metrics != nil {
		gopts.OnPanic, gopts.OnCacheLookup, gopts.OnPaced = inst.metrics.Panic, inst.metrics.CacheLookup, inst.metrics.Paced
	}
	mux := http.NewServeMux()
	mux.Handle("/graphql", inst.graphql(limiter, cfg.RateLimit, graph.NewHandler(gopts)))
	// The admin routes: on the admin listener when there is one, beside
	// /graphql otherwise (then only the health endpoints).
	adminMux := mux
	if adminLn != nil {
		adminMux = http.NewServeMux()
		adminMux.Handle("GET /metrics", promhttp.HandlerFor(inst.metrics.Registry, promhttp.HandlerOpts{}))
		adminMux.HandleFunc("/debug/pprof/", pprof.Index)
		adminMux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		adminMux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		adminMux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		adminMux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	adminMux.HandleFunc("GET /healthz", healthz)
	adminMux.Handle("GET /readyz", readyz)
	adminMux.HandleFunc("GET /version", version)
	if cfg.Playground {
		// Every path no other route claims: index.html at /, assets below.
		mux.Handle("/", playground.Handler(playgroundConfig(onSimulator)))
		if !playground.Built() {
			later = append(later, func(log *slog.Logger) {
				log.Warn("the playground is not built, so / explains how to build it; `make run` builds it")
			})
		}
	}

	// The middleware chain, outermost first: a panic anywhere becomes a 500;
	// every request gets an id, its Info, and the server span that continues
	// the caller's trace; then one access line, which names the span; CORS
	// answers preflights before a route sees them. The GraphQL endpoint
	// owns its requests' deadline (graph.Options.RequestTimeout).
	srv := &http.Server{
		Handler: httpx.Recover(log, inst.internalError,
			httpx.RequestID(
				withInfo(cfg.Cache,
					tracing.Handler(
						httpx.AccessLog(log, httpx.AccessLogOptions{Quiet: probePaths, Attrs: infoAttrs},
							withCORS(cfg.CORSOrigins, cfg.CORSAllowedHeaders, mux)),
						mux, probePaths...)))),
		ReadHeaderTimeout: 10 * time.Second,
		// A GET of the largest query string and the other headers; what a
		// connection holds while its headers arrive (docs/security.md).
		MaxHeaderBytes: graph.MaxHeaderBytes,
		// The bounds of the other routes: on /graphql the request's deadline
		// bounds the body's read and the answer's writing (graph's readFirst).
		ReadTimeout: 30 * time.Second,
		// Longer than any request may take, so a deadline answer is written.
		WriteTimeout: cfg.RequestTimeout + 10*time.Second,
		IdleTimeout:  120 * time.Second,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	addr := ln.Addr().String()
	if onSimulator {
		log.Info("no -upstream given: running on the built-in simulator of the Cost Management API; "+
			"send Authorization: Bearer "+sim.DemoKey+" (preset in the playground; the README lists the other demo keys)",
			"simulator", upstreamURL, "demo_key", sim.DemoKey)
	} else {
		checkUpstream(ctx, readyz, log)
	}
	bi := readBuildInfo()
	attrs := []any{"addr", addr, "graphql", baseURL(addr) + "/graphql"}
	if cfg.Playground {
		attrs = append(attrs, "playground", baseURL(addr)+"/")
	}
	if adminLn != nil {
		attrs = append(attrs, "admin", baseURL(adminLn.Addr().String())+"/")
	}
	attrs = append(attrs, "introspection", cfg.Introspection, "cors_origins", cfg.CORSOrigins,
		"tracing", tracing.Enabled(), "redis", cfg.RedisURL != "", "rate_limit", cfg.RateLimit,
		"version", bi.Version, "revision", bi.Revision)
	log.Info("serving", attrs...)
	for _, l := range later {
		l(log)
	}
	if ready != nil {
		ready <- addr
	}
	// Every request is answered by its deadline and a second (graph's
	// deadline guard), so the grace period only needs to exceed that; a
	// handler deaf to its deadline may run on after its answer was sent,
	// and does not hold the shutdown (graph.Options.Overdue).
	grace := cfg.RequestTimeout + 5*time.Second
	if adminLn == nil {
		return httpx.Serve(ctx, srv, ln, grace, log, gopts.Overdue.Load)
	}
	adminSrv := &http.Server{Handler: adminMux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: graph.MaxHeaderBytes, WriteTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	adminDone := make(chan error, 1)
	go func() { adminDone <- httpx.Serve(ctx, adminSrv, adminLn, grace, slog.New(slog.DiscardHandler), nil) }()
	err = httpx.Serve(ctx, srv, ln, grace, log, gopts.Overdue.Load)
	if aerr := <-adminDone; err == nil {
		err = aerr
	}
	return err
}

// instruments are what the server's middleware and the upstream client's
// observer share: metrics (nil without -admin-listen) and tracing.
type instruments struct {
	metrics *telemetry.Metrics
	tracing *telemetry.Tracing
}

// internalError answers a request whose handler panicked.
func (in *instruments) internalError(w http.ResponseWriter, r *http.Request) {
	if in.metrics != nil {
		in.metrics.Panic("http")
	}
	codes.Write(w, r, http.StatusInternalServerError, codes.Errorf(codes.Internal, "internal error"))
}

// baseURL is the URL to show for a listening address: an unspecified host
// (":8080" listens on every interface) is shown as localhost.
func baseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// setGC tunes the garbage collector with -gc-percent and -memory-limit,
// each unless the Go runtime's own variable (GOGC, GOMEMLIMIT) is set, which
// the runtime has then applied already and which wins. A GOMEMLIMIT stands
// in for -memory-limit in choosing the automatic target, so the target is
// 400 only where some limit applies. It returns what logs what applies, as
// the runtime reads it, and where each setting comes from.
func setGC(cfg Config, lookupEnv func(string) (string, bool)) func(*slog.Logger) {
	gogcSet := envSet(lookupEnv, "GOGC")
	limitSet := envSet(lookupEnv, "GOMEMLIMIT")
	if limitSet {
		cfg.MemoryLimit = debug.SetMemoryLimit(-1) // what the runtime read from GOMEMLIMIT
		if cfg.MemoryLimit == math.MaxInt64 {
			cfg.MemoryLimit = 0 // GOMEMLIMIT=off
		}
	}
	percent, limit := cfg.gcSettings(containerMemory())
	// Only GOMEMLIMIT=off under -gc-percent -1 is both: the flags alone are
	// refused so.
	noLimit := percent == -1 && limit == 0
	if noLimit {
		percent = 100
	}
	if !gogcSet {
		debug.SetGCPercent(percent)
	}
	if !limitSet {
		debug.SetMemoryLimit(cmp.Or(limit, math.MaxInt64)) // MaxInt64: the runtime's "no limit"
	}
	percent, limit = appliedGC()
	return func(log *slog.Logger) {
		if noLimit {
			log.Warn("garbage collector: -gc-percent -1 needs a memory limit and GOMEMLIMIT is off; collecting at 100")
		}
		log.Info("garbage collector",
			"gc_percent", strconv.Itoa(percent), "gc_percent_from", gcSource(gogcSet, "GOGC", cfg.GCPercent),
			"memory_limit", memoryLimit{&limit}.String(), "memory_limit_from", gcSource(limitSet, "GOMEMLIMIT", cfg.MemoryLimit))
	}
}

// appliedGC reads the collector's target (-1: off) and memory limit (0:
// none) as the runtime applies them, without changing either.
func appliedGC() (percent int, limit int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	// The runtime gives the target as a uint64 of its int32: -1 when off.
	percent, limit = int(int32(s[0].Value.Uint64())), int64(s[1].Value.Uint64())
	if limit == math.MaxInt64 {
		limit = 0
	}
	return percent, limit
}

// envSet reports whether the runtime's variable name is set as the runtime
// reads it: an empty value is as unset.
func envSet(lookupEnv func(string) (string, bool), name string) bool {
	v, ok := lookupEnv(name)
	return ok && v != ""
}

// gcSource names where a setting of the collector comes from: the runtime's
// variable, the gateway's automatic choice, or the flag.
func gcSource[T int | int64](env bool, variable string, setting T) string {
	switch {
	case env:
		return variable
	case setting == Auto:
		return "auto"
	}
	return "flag"
}
