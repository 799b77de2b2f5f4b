// Command costgw is a GraphQL gateway in front of the Cost Management REST
// API. Without -upstream it runs on the built-in simulator of that API, so it
// works with no account and no network.
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
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/99designs/gqlgen/graphql/playground"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
)

// Config is the gateway's configuration. Every field has a flag and an
// environment variable; the flag wins.
type Config struct {
	Listen          string        // -listen, COSTGW_LISTEN
	Upstream        string        // -upstream, COSTGW_UPSTREAM; empty runs the built-in simulator
	CursorSecret    string        // -cursor-secret, COSTGW_CURSOR_SECRET
	UpstreamTimeout time.Duration // -upstream-timeout, COSTGW_UPSTREAM_TIMEOUT
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "costgw:", err)
		os.Exit(1)
	}
}

// parseConfig reads flags, falling back to environment variables.
func parseConfig(args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("costgw", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c Config
	fs.StringVar(&c.Listen, "listen", env("COSTGW_LISTEN", ":8080"), "address to serve on (env COSTGW_LISTEN)")
	fs.StringVar(&c.Upstream, "upstream", env("COSTGW_UPSTREAM", ""), "base URL of the Cost Management API; empty runs the built-in simulator (env COSTGW_UPSTREAM)")
	fs.StringVar(&c.CursorSecret, "cursor-secret", env("COSTGW_CURSOR_SECRET", ""), "secret that signs connection cursors; empty means random per process (env COSTGW_CURSOR_SECRET)")
	timeout, err := time.ParseDuration(env("COSTGW_UPSTREAM_TIMEOUT", upstream.DefaultTimeout.String()))
	if err != nil {
		return c, fmt.Errorf("COSTGW_UPSTREAM_TIMEOUT: %w", err)
	}
	fs.DurationVar(&c.UpstreamTimeout, "upstream-timeout", timeout, "timeout of one upstream call attempt (env COSTGW_UPSTREAM_TIMEOUT)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return c, nil
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// run serves until ctx ends. If ready is not nil it receives the address
// the gateway listens on.
func run(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) error {
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))

	upstreamURL := cfg.Upstream
	if upstreamURL == "" {
		// The simulator is served on a loopback port of its own, so the
		// gateway talks to it over real HTTP exactly as to the real API.
		simLn, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		simSrv := &http.Server{Handler: sim.New(sim.Options{}), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = simSrv.Serve(simLn) }()
		defer simSrv.Close()
		upstreamURL = "http://" + simLn.Addr().String()
		log.Info("no -upstream given: running on the built-in simulator of the Cost Management API",
			"simulator", upstreamURL, "demo_key", sim.DemoKey)
	}
	client, err := upstream.NewClient(upstreamURL, upstream.WithTimeout(cfg.UpstreamTimeout))
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	gql := graph.NewHandler(graph.Options{Client: client, CursorSecret: []byte(cfg.CursorSecret), Introspection: true})
	mux.Handle("/graphql", gql)
	mux.Handle("GET /{$}", playground.Handler("Cost Management GraphQL", "/graphql"))

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	addr := ln.Addr().String()
	log.Info("serving", "graphql", "http://"+addr+"/graphql", "playground", "http://"+addr+"/")
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
	log.Info("shutting down: draining requests in flight")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}
