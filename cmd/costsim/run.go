package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	cfgpkg "github.com/costgw/gateway/internal/config"
	"github.com/costgw/gateway/internal/httpx"
	"github.com/costgw/gateway/upstream/sim"
)

// shutdownGrace bounds how long in-flight requests may finish after a signal.
const shutdownGrace = 10 * time.Second

// config is what the flags and environment select.
type config struct {
	listen string
	opts   sim.Options
}

// run serves the simulator until ctx ends, then shuts down gracefully. Logs
// go to stdout.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseConfig(args, os.LookupEnv, stdout)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stdout, nil))
	s := sim.New(cfg.opts)

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", cfg.listen, err)
	}
	srv := &http.Server{
		Handler: httpx.AccessLog(logger, httpx.AccessLogOptions{Attrs: func(r *http.Request) []slog.Attr {
			return []slog.Attr{slog.String("operation", s.OperationID(r.Method, r.URL.EscapedPath()))}
		}}, s),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("cost management API simulator listening",
		"url", "http://"+ln.Addr().String(),
		"as_of", s.AsOf().Format("2006-01-02"),
		"seed", cfg.opts.Seed)
	for _, k := range demoKeys() {
		logger.Info("demo key", "key", k.key, "use", k.use)
	}
	logger.Info("control routes: POST /_sim/keys/{key}/revoke and /restore, PUT /_sim/keys/{key}/rate-limit {\"per_second\": N} (docs/simulator.md)")
	// Requests still waiting out injected latency after the grace period
	// are cut off.
	return httpx.Serve(ctx, srv, ln, shutdownGrace, logger, nil)
}

// demoKeys describes the simulator's API keys for the start-up log.
func demoKeys() []struct{ key, use string } {
	return []struct{ key, use string }{
		{sim.DemoKey, "organization one (org-1001), every scope"},
		{sim.ReadOnlyKey, "organization one, read scopes only: writes answer 403 forbidden_scope"},
		{sim.OtherOrgKey, "organization two (org-2002), every scope; disjoint data for tenant isolation"},
		{sim.UnentitledKey, "organization three (org-3003): every call answers 403 forbidden_entitlement"},
	}
}

// parseConfig reads the environment, then the flags, which win.
func parseConfig(args []string, lookupEnv func(string) (string, bool), output io.Writer) (config, error) {
	fs := cfgpkg.New("costsim", "COSTSIM", output)
	var (
		listen, asOf, faultOps string
		seed                   uint64
		l                      sim.Latency
		f                      sim.Faults
	)
	fs.StringVar(&listen, "listen", "127.0.0.1:8090", "address to listen on")
	fs.Uint64Var(&seed, "seed", 1, "seed of the generated data")
	fs.StringVar(&asOf, "as-of", "2026-11-20", "last day with cost data (YYYY-MM-DD)")
	fs.DurationVar(&l.Fixed, "latency", 0, "fixed latency added to every request")
	fs.DurationVar(&l.Jitter, "jitter", 0, "uniform random extra latency, up to this")
	fs.Float64Var(&l.SpikeRate, "spike-rate", 0, "probability (0-1) of a latency spike")
	fs.DurationVar(&l.Spike, "spike", 0, "extra latency of a spike")
	fs.Float64Var(&f.Error500, "fault-500", 0, "rate (0-1) of injected 500 internal_error")
	fs.Float64Var(&f.Error503, "fault-503", 0, "rate (0-1) of injected 503 service_unavailable")
	fs.Float64Var(&f.RateLimit429, "fault-429", 0, "rate (0-1) of injected 429 rate_limited")
	fs.Float64Var(&f.DropBefore, "fault-drop-before", 0, "rate (0-1) of connections dropped before the operation runs")
	fs.Float64Var(&f.DropAfter, "fault-drop-after", 0, "rate (0-1) of connections dropped after the operation ran (writes commit)")
	fs.DurationVar(&f.RetryAfter, "retry-after", time.Second, "Retry-After sent with 429 and 503 (whole seconds, at least 1)")
	fs.StringVar(&faultOps, "fault-ops", "", "comma-separated operation ids the faults apply to (default all)")
	if err := fs.Parse(args, lookupEnv); err != nil {
		return config{}, err
	}

	var errs cfgpkg.Errors
	day, err := time.Parse("2006-01-02", asOf)
	if err != nil {
		errs.Addf("as-of", asOf, "want a date YYYY-MM-DD")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"latency", l.Fixed}, {"jitter", l.Jitter}, {"spike", l.Spike}, {"retry-after", f.RetryAfter}} {
		if d.v < 0 {
			errs.Addf(d.name, d.v, "must not be negative")
		}
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"spike-rate", l.SpikeRate}, {"fault-500", f.Error500}, {"fault-503", f.Error503}, {"fault-429", f.RateLimit429},
		{"fault-drop-before", f.DropBefore}, {"fault-drop-after", f.DropAfter}} {
		if !(r.v >= 0 && r.v <= 1) {
			errs.Addf(r.name, r.v, "want a rate from 0 to 1")
		}
	}
	// Unknown operation ids are refused rather than ignored: a typo would
	// otherwise silently inject no fault at all.
	for _, op := range strings.Split(faultOps, ",") {
		if op = strings.TrimSpace(op); op == "" {
			continue
		}
		if !slices.Contains(sim.Operations(), op) {
			errs.Addf("fault-ops", faultOps, "unknown operation id %q (known: %s)", op, strings.Join(sim.Operations(), ", "))
			continue
		}
		f.Ops = append(f.Ops, op)
	}
	if err := errs.Err(); err != nil {
		return config{}, fs.Explain(err)
	}
	return config{listen: listen, opts: sim.Options{Seed: seed, AsOf: day, Latency: l, Faults: f}}, nil
}
