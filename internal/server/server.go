// Package server is the costgw command: its configuration, the routes and
// middleware chain in front of the GraphQL endpoint, the health endpoints,
// and serving until a signal. The module root's main only calls Run.
package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/internal/httpx"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
	"github.com/costgw/gateway/web/playground"
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
	// Listen first: a busy port fails before anything says the gateway runs.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", cfg.Listen, err)
	}
	defer ln.Close()

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

	base := upstream.NewTransport()
	base.ResponseHeaderTimeout = cfg.UpstreamTimeout
	client, err := upstream.NewClient(upstreamURL,
		upstream.WithHTTPClient(&http.Client{Transport: base, Timeout: cfg.UpstreamTimeout}),
		upstream.WithMaxInFlight(cfg.UpstreamInFlight),
		upstream.WithObserver(countCalls),
		upstream.WithLogger(log))
	if err != nil {
		return err
	}
	readyz := newReadiness(client.Ping, min(readinessTimeout, cfg.UpstreamTimeout), log)

	var trusted graph.Manifest
	if cfg.PersistedDocuments != "" {
		if trusted, err = graph.ReadManifest(cfg.PersistedDocuments); err != nil {
			return fmt.Errorf("-persisted-documents: %w", err)
		}
		log.Info("trusted documents", "file", cfg.PersistedDocuments, "documents", len(trusted), "only_persisted", cfg.OnlyPersisted)
	}

	mux := http.NewServeMux()
	mux.Handle("/graphql", graph.NewHandler(graph.Options{
		TrustedDocuments: trusted,
		OnlyPersisted:    cfg.OnlyPersisted,
		Client:           client,
		CursorSecret:     []byte(cfg.CursorSecret),
		Introspection:    cfg.Introspection,
		Logger:           log,
		OnOperation:      nameOperation,
		Limits:           &cfg.Limits,
		MaxBodyBytes:     cfg.MaxBodyBytes,
		Loaders:          loaders.Options{MaxConcurrency: cfg.RequestFanout},
	}))
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("GET /readyz", readyz)
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
	handler := httpx.Recover(log, internalError,
		httpx.RequestID(
			withStats(
				httpx.AccessLog(log, httpx.AccessLogOptions{Quiet: []string{"/healthz", "/readyz"}, Attrs: statsAttrs},
					withCORS(cfg.CORSOrigins, cfg.CORSAllowedHeaders,
						httpx.Deadline(cfg.RequestTimeout, mux))))))

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
	attrs = append(attrs, "introspection", cfg.Introspection, "cors_origins", cfg.CORSOrigins,
		"version", bi.Version, "revision", bi.Revision)
	log.Info("serving", attrs...)
	if ready != nil {
		ready <- addr
	}
	// None outlives its deadline, so the grace period only needs to exceed it.
	return httpx.Serve(ctx, srv, ln, cfg.RequestTimeout+5*time.Second, log)
}

// internalError answers a request whose handler panicked.
func internalError(w http.ResponseWriter, r *http.Request) {
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
