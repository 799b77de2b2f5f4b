package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

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
		return err
	}
	srv := &http.Server{
		Handler:           accessLog(logger, s),
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

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// Requests still waiting out injected latency: cut them off.
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
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

// parseConfig reads the flags, each defaulting to its environment variable.
func parseConfig(args []string, lookupEnv func(string) (string, bool), output io.Writer) (config, error) {
	fs := flag.NewFlagSet("costsim", flag.ContinueOnError)
	fs.SetOutput(output)
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
	fs.VisitAll(func(fl *flag.Flag) { fl.Usage += " (env " + envName(fl.Name) + ")" })

	// The environment sets the defaults; the command line overrides them.
	var envErr error
	fs.VisitAll(func(fl *flag.Flag) {
		if v, ok := lookupEnv(envName(fl.Name)); ok && envErr == nil {
			if err := fl.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q: %w", envName(fl.Name), v, err)
			}
		}
	})
	if envErr != nil {
		return config{}, envErr
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}

	day, err := time.Parse("2006-01-02", asOf)
	if err != nil {
		return config{}, fmt.Errorf("-as-of %q: want YYYY-MM-DD", asOf)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"latency", l.Fixed}, {"jitter", l.Jitter}, {"spike", l.Spike}, {"retry-after", f.RetryAfter}} {
		if d.v < 0 {
			return config{}, fmt.Errorf("-%s %v: must not be negative", d.name, d.v)
		}
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"spike-rate", l.SpikeRate}, {"fault-500", f.Error500}, {"fault-503", f.Error503}, {"fault-429", f.RateLimit429},
		{"fault-drop-before", f.DropBefore}, {"fault-drop-after", f.DropAfter}} {
		if !(r.v >= 0 && r.v <= 1) {
			return config{}, fmt.Errorf("-%s %v: want a rate from 0 to 1", r.name, r.v)
		}
	}
	// Unknown operation ids are refused rather than ignored: a typo would
	// otherwise silently inject no fault at all.
	for _, op := range strings.Split(faultOps, ",") {
		if op = strings.TrimSpace(op); op == "" {
			continue
		}
		if !slices.Contains(sim.Operations(), op) {
			return config{}, fmt.Errorf("-fault-ops: unknown operation id %q (known: %s)", op, strings.Join(sim.Operations(), ", "))
		}
		f.Ops = append(f.Ops, op)
	}
	return config{listen: listen, opts: sim.Options{Seed: seed, AsOf: day, Latency: l, Faults: f}}, nil
}

// envName is the environment variable of a flag: COSTSIM_FAULT_500 for
// -fault-500.
func envName(flagName string) string {
	return "COSTSIM_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// accessLog writes one line per request: method, path, operation, status and
// duration. It never logs headers, so neither the Authorization header nor
// the key can leak into logs, and it logs the path without the query string.
func accessLog(logger *slog.Logger, s *sim.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		s.ServeHTTP(rec, r)
		attrs := []any{
			"method", r.Method,
			"path", r.URL.Path,
			"operation", s.OperationID(r.Method, r.URL.EscapedPath()),
			"status", rec.status,
			"duration", time.Since(start),
		}
		if rec.status == 0 {
			attrs = append(attrs, "note", "no response: connection dropped or caller gone")
		}
		logger.Info("request", attrs...)
	})
}

// statusRecorder remembers the status written. Unwrap lets
// http.ResponseController reach the connection, so injected drops can still
// hijack it.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
