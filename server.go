// Command costgw is a GraphQL gateway in front of the Cost Management REST
// API. Without -upstream it runs on the built-in simulator of that API, so it
// works with no account and no network.
//
// This file is the one place for configuration: the Config struct, its flags
// and environment variables, the routes and the middleware chain.
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
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
	"github.com/costgw/gateway/web/playground"
)

// Config is the gateway's configuration. Every field but the two actions at
// the end has a flag and an environment variable, COSTGW_ and the flag's name
// in capitals with underscores for dashes (-log-level: COSTGW_LOG_LEVEL); the
// flag wins. `costgw -h` lists them, and so does the README.
type Config struct {
	// Listen is the address to serve on.
	Listen string
	// Upstream is the base URL of the Cost Management API, which may carry a
	// path prefix. Empty runs the built-in simulator on a loopback port.
	Upstream string
	// CursorSecret signs connection cursors. Empty means a random secret per
	// process; set it so cursors survive restarts and work across replicas.
	CursorSecret string
	// UpstreamTimeout bounds one attempt of one upstream call.
	UpstreamTimeout time.Duration
	// RequestTimeout bounds one request to the gateway, all its upstream calls
	// and retries included: what has not finished by then fails with an error
	// (UPSTREAM_UNAVAILABLE) instead of hanging.
	RequestTimeout time.Duration
	// CORSOrigins are the browser origins allowed to call the gateway from
	// another origin: exact origins (https://app.example.com), patterns with
	// one * (https://*.example.com), "localhost" for http and https on
	// localhost, 127.0.0.1 and [::1] at any port, or "*" for any origin. Unset,
	// it is "localhost" on the simulator and empty (no cross-origin caller)
	// against a real upstream.
	CORSOrigins []string
	// Playground serves the GraphiQL playground at /.
	Playground bool
	// Introspection answers __schema and __type queries. The playground's
	// documentation explorer and autocompletion need it.
	Introspection bool
	// LogLevel is the lowest level logged: debug, info, warn or error. Access
	// lines of /healthz and /readyz are at debug, so probes do not flood the
	// log.
	LogLevel slog.Level
	// LogFormat is json (one object per line) or text (key=value).
	LogFormat string
	// Limits bound every GraphQL operation before any upstream call (0 turns
	// a limit off): tokens, depth, aliases, root fields, and the estimated
	// number of upstream calls.
	Limits limits.Config
	// MaxBodyBytes bounds a request body (413 above).
	MaxBodyBytes int64
	// RequestFanout bounds the upstream calls one request has in flight.
	RequestFanout int
	// UpstreamInFlight bounds the upstream calls in flight across all
	// requests (0: no bound).
	UpstreamInFlight int

	// Version makes the binary print its build information and exit.
	Version bool
	// HealthCheck makes the binary ask the gateway listening on Listen for
	// /healthz and exit 0 if it answers 200, 1 otherwise: a container health
	// check for an image that has no shell and no curl.
	HealthCheck bool
}

// Defaults of the configuration.
const (
	defaultListen         = ":8080"
	defaultRequestTimeout = 30 * time.Second
	defaultLogFormat      = "json"
	// corsLocalhost is the CORSOrigins entry for loopback origins.
	corsLocalhost = "localhost"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr, nil); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "costgw:", err)
		os.Exit(1)
	}
}

// envName is the environment variable of a flag.
func envName(flagName string) string {
	return "COSTGW_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// actionFlags run once and exit instead of configuring the server; they have
// no environment variable, which would turn every start into that action.
var actionFlags = map[string]bool{"version": true, "healthcheck": true}

// newFlagSet declares every flag of c with its default.
func newFlagSet(c *Config, cors *originList, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("costgw", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Listen, "listen", defaultListen, "address to serve on")
	fs.StringVar(&c.Upstream, "upstream", "", "base `URL` of the Cost Management API; empty runs the built-in simulator")
	fs.StringVar(&c.CursorSecret, "cursor-secret", "", "`secret` that signs connection cursors; empty means random per process")
	fs.DurationVar(&c.UpstreamTimeout, "upstream-timeout", upstream.DefaultTimeout, "timeout of one upstream call attempt")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", defaultRequestTimeout, "deadline of one request, all its upstream calls included")
	fs.Var(cors, "cors-origins", "comma-separated `origins` allowed to call from a browser on another origin: exact, with one *, "+
		"\"localhost\" (any port on localhost, 127.0.0.1, [::1]) or \"*\"; default localhost on the simulator, none against -upstream")
	fs.BoolVar(&c.Playground, "playground", true, "serve the GraphiQL playground at /")
	fs.BoolVar(&c.Introspection, "introspection", true, "answer introspection queries (the playground's docs need them)")
	fs.TextVar(&c.LogLevel, "log-level", slog.LevelInfo, "lowest `level` logged: debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", defaultLogFormat, "log `format`: json or text")
	def := limits.Defaults()
	fs.IntVar(&c.Limits.MaxTokens, "max-tokens", def.MaxTokens, "most lexical tokens of a query document (0: no limit)")
	fs.IntVar(&c.Limits.MaxDepth, "max-depth", def.MaxDepth, "deepest field nesting of an operation (0: no limit)")
	fs.IntVar(&c.Limits.MaxAliases, "max-aliases", def.MaxAliases, "most aliased fields of an operation (0: no limit)")
	fs.IntVar(&c.Limits.MaxRootFields, "max-root-fields", def.MaxRootFields, "most root fields of an operation (0: no limit)")
	fs.IntVar(&c.Limits.MaxCost, "max-cost", def.MaxCost, "most upstream calls an operation is estimated to make (0: no limit)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", graph.DefaultMaxBodyBytes, "largest request body, in bytes")
	fs.IntVar(&c.RequestFanout, "request-fanout", loaders.DefaultMaxConcurrency, "most upstream calls one request has in flight")
	fs.IntVar(&c.UpstreamInFlight, "upstream-in-flight", upstream.DefaultMaxInFlight, "most upstream calls in flight across all requests (0: no bound)")
	fs.BoolVar(&c.Version, "version", false, "print the build information and exit")
	fs.BoolVar(&c.HealthCheck, "healthcheck", false, "GET /healthz of the gateway at -listen on loopback; exit 0 if it answers 200, else 1")
	fs.VisitAll(func(f *flag.Flag) {
		if !actionFlags[f.Name] {
			f.Usage += " (env " + envName(f.Name) + ")"
		}
	})
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: costgw [flags]

costgw serves a GraphQL API at /graphql and the GraphiQL playground at / in
front of the Cost Management REST API. Without -upstream it runs on a built-in
simulator of that API; send "Authorization: Bearer demo-key".
Also served: /healthz (liveness), /readyz (the upstream answers), /version.

Every flag but -version and -healthcheck can be set with the environment
variable named after it; a flag wins over its variable.

`)
		fs.PrintDefaults()
	}
	return fs
}

// parseConfig reads the environment, then the flags, which win.
func parseConfig(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) (Config, error) {
	var c Config
	var cors originList
	fs := newFlagSet(&c, &cors, stderr)
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if actionFlags[f.Name] {
			return
		}
		if v, ok := lookupEnv(envName(f.Name)); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", envName(f.Name), v, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	c.CORSOrigins = cors.origins
	if !cors.set && c.Upstream == "" {
		c.CORSOrigins = []string{corsLocalhost}
	}
	return c, c.validate()
}

func (c Config) validate() error {
	var errs []error
	if c.LogFormat != "json" && c.LogFormat != "text" {
		errs = append(errs, fmt.Errorf("-log-format must be json or text, not %q", c.LogFormat))
	}
	if c.UpstreamTimeout <= 0 {
		errs = append(errs, fmt.Errorf("-upstream-timeout must be positive, not %v", c.UpstreamTimeout))
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("-request-timeout must be positive, not %v", c.RequestTimeout))
	}
	for name, v := range map[string]int64{"max-tokens": int64(c.Limits.MaxTokens), "max-depth": int64(c.Limits.MaxDepth),
		"max-aliases": int64(c.Limits.MaxAliases), "max-root-fields": int64(c.Limits.MaxRootFields),
		"max-cost": int64(c.Limits.MaxCost), "upstream-in-flight": int64(c.UpstreamInFlight)} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("-%s must not be negative, not %d", name, v))
		}
	}
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("-max-body-bytes must be positive, not %d", c.MaxBodyBytes))
	}
	if c.RequestFanout <= 0 {
		errs = append(errs, fmt.Errorf("-request-fanout must be positive, not %d", c.RequestFanout))
	}
	if c.Upstream != "" {
		if u, err := url.Parse(c.Upstream); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("-upstream must be an absolute http(s) URL, not %q", c.Upstream))
		}
	}
	for _, o := range c.CORSOrigins {
		if err := checkOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("-cors-origins: %w", err))
		}
	}
	return errors.Join(errs...)
}

// originList is the value of -cors-origins. It remembers whether it was set,
// since its default depends on -upstream.
type originList struct {
	origins []string
	set     bool
}

func (l *originList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(l.origins, ",")
}

func (l *originList) Set(s string) error {
	l.set = true
	l.origins = nil
	for _, o := range strings.Split(s, ",") {
		if o = strings.TrimSpace(o); o != "" {
			l.origins = append(l.origins, o)
		}
	}
	return nil
}

// run serves until ctx ends, or runs the action a flag asks for. If ready is
// not nil it receives the address the gateway listens on.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer, ready chan<- string) error {
	cfg, err := parseConfig(args, lookupEnv, stderr)
	if err != nil {
		return err
	}
	switch {
	case cfg.Version:
		_, err := fmt.Fprintln(stdout, readBuildInfo())
		return err
	case cfg.HealthCheck:
		return healthCheck(ctx, cfg.Listen)
	}
	return serve(ctx, cfg, newLogger(cfg, stderr), ready)
}

// newLogger returns the logger of cfg's level and format.
func newLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// serve runs the gateway until ctx ends, then stops accepting connections,
// lets the requests in flight finish and returns.
func serve(ctx context.Context, cfg Config, log *slog.Logger, ready chan<- string) error {
	onSimulator := cfg.Upstream == ""
	upstreamURL := cfg.Upstream
	if onSimulator {
		// The simulator is served on a loopback port of its own, so the
		// gateway talks to it over real HTTP exactly as to the real API. It is
		// closed after the gateway has drained, so requests in flight finish.
		simLn, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		simSrv := &http.Server{Handler: sim.New(sim.Options{}), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = simSrv.Serve(simLn) }()
		defer simSrv.Close()
		upstreamURL = "http://" + simLn.Addr().String()
		log.Info("no -upstream given: running on the built-in simulator of the Cost Management API; "+
			"send Authorization: Bearer "+sim.DemoKey+" (preset in the playground; the README lists the other demo keys)",
			"simulator", upstreamURL, "demo_key", sim.DemoKey)
	}

	base := upstream.NewTransport()
	base.ResponseHeaderTimeout = cfg.UpstreamTimeout
	client, err := upstream.NewClient(upstreamURL, upstream.WithHTTPClient(&http.Client{
		Transport: countCalls(base),
		Timeout:   cfg.UpstreamTimeout,
	}), upstream.WithMaxInFlight(cfg.UpstreamInFlight))
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.Handle("/graphql", graph.NewHandler(graph.Options{
		Client:        client,
		CursorSecret:  []byte(cfg.CursorSecret),
		Introspection: cfg.Introspection,
		OnOperation:   nameOperation,
		Limits:        &cfg.Limits,
		MaxBodyBytes:  cfg.MaxBodyBytes,
		Loaders:       loaders.Options{MaxConcurrency: cfg.RequestFanout},
	}))
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("GET /readyz", readiness(base, upstreamURL, min(readinessTimeout, cfg.UpstreamTimeout), log))
	mux.HandleFunc("GET /version", version)
	if cfg.Playground {
		// Every path no other route claims: index.html at /, assets below.
		mux.Handle("/", playground.Handler(playgroundConfig(onSimulator)))
		if !playground.Built() {
			log.Warn("the playground is not built, so / explains how to build it; `make run` builds it")
		}
	}

	// The middleware chain, outermost first: a panic anywhere becomes a 500;
	// every request gets an id, then one access line; CORS answers preflights
	// before a route sees them; every request gets its deadline.
	handler := recoverPanics(log,
		withRequestID(
			accessLog(log,
				withCORS(cfg.CORSOrigins,
					withDeadline(cfg.RequestTimeout, mux)))))

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Longer than any request may take, so a deadline answer is written.
		WriteTimeout: cfg.RequestTimeout + 10*time.Second,
		IdleTimeout:  120 * time.Second,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	addr := ln.Addr().String()
	bi := readBuildInfo()
	attrs := []any{"addr", addr, "graphql", baseURL(addr) + "/graphql"}
	if cfg.Playground {
		attrs = append(attrs, "playground", baseURL(addr)+"/")
	}
	attrs = append(attrs, "introspection", cfg.Introspection, "cors_origins", cfg.CORSOrigins,
		"version", bi.Version, "revision", bi.Revision)
	log.Info("serving", attrs...)
	if ready != nil {
		ready <- addr
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Shutdown closes the listener at once, so new connections are refused,
	// then waits for the requests in flight. None outlives its deadline, so
	// the grace period only needs to exceed it.
	log.Info("shutting down: no new connections; draining requests in flight")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.RequestTimeout+5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped: every request answered")
	return nil
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

// playgroundConfig is what the playground is told: on the simulator, the demo
// key in the Authorization header; against a real upstream, no key, since the
// gateway holds none.
func playgroundConfig(onSimulator bool) playground.Config {
	c := playground.Config{Endpoint: "graphql", Query: starterQuery(onSimulator)}
	if onSimulator {
		c.Headers = map[string]string{"Authorization": "Bearer " + sim.DemoKey}
	}
	return c
}

// starterQuery is the first tab of the playground: budgets with their
// plannings, actuals and metrics.
func starterQuery(onSimulator bool) string {
	intro := `# costgw: GraphQL over the Cost Management API,
# here on its built-in simulator.
#
# The Headers tab below holds the demo key.
# Run the query with the ▶ button or Ctrl-Enter;
# the book icon on the left opens the schema docs.
`
	if !onSimulator {
		intro = `# costgw: GraphQL over the Cost Management API.
#
# Put your API key in the Headers tab below:
#   {"Authorization": "Bearer <your key>"}
# Run the query with the ▶ button or Ctrl-Enter;
# the book icon on the left opens the schema docs.
`
	}
	return intro + `
query Budgets {
  budgets(first: 5) {
    nodes {
      name
      status
      startDate
      endDate
      metrics {
        totalTarget
        totalActual
        variance
      }
      actuals {
        total
        byPeriod {
          period
          amount
        }
      }
      plannings {
        dimension1
        targetItems {
          dimensionValue
          amount
        }
        actuals {
          period
          amount
        }
      }
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}
`
}
