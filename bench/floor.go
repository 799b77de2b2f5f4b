package main

// The extra-hop floor: the least a gateway in front of the REST API can
// cost. It is the direct client's work (the same REST calls with the same
// upstream client, the same decoding and the same JSON answer) served by a
// plain net/http handler in a process of its own, so that a request crosses
// the same two HTTP hops as through the gateway: client → floor → simulator.
// It has no GraphQL: no parsing, validation, executor or limits. Against the
// direct client it shows what the hop costs; against the gateway, what
// GraphQL costs on top of the hop.
//
// The floor is this same program, started again by the harness with
// -serve-floor, so that it shares queries.go and direct.go with the direct
// client and never drifts from it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/costgw/gateway/upstream"
)

// floorPath is where the floor serves a query.
func floorPath(name string) string { return "/q/" + name }

// serveFloor serves every query's direct function at floorPath(name) on
// listen until ctx ends. The answer is {"data": …}, as the direct client's.
func serveFloor(ctx context.Context, listen, upstreamURL string, fx fixture) error {
	c, err := upstream.NewClient(upstreamURL)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	for i := range queries {
		q := &queries[i]
		mux.HandleFunc("POST "+floorPath(q.Name), func(w http.ResponseWriter, r *http.Request) {
			// The request carries the gateway's body, so that both read the
			// same bytes; the floor has no use for it.
			_, _ = io.Copy(io.Discard, r.Body)
			key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || key == "" {
				http.Error(w, "no bearer key", http.StatusUnauthorized)
				return
			}
			v, err := q.Direct(upstream.WithAPIKey(r.Context(), key), c, fx)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"data": v})
		})
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if err := srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// startFloor starts the floor, this program with -serve-floor, on the
// simulator, and returns it with its base URL.
func startFloor(ctx context.Context, exe, simURL string, fx fixture) (*proc, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := startProc("floor", "", nil, nil, exe, "-serve-floor", addr, "-floor-upstream", simURL,
		"-floor-budget", fx.BudgetID)
	if err != nil {
		return nil, "", err
	}
	if err := waitHTTP(ctx, p, "http://"+addr+"/healthz", 200, 30*time.Second); err != nil {
		p.stop()
		return nil, "", err
	}
	return p, "http://" + addr, nil
}

// newFloor is the floor as a contender. Its requests carry the gateway's
// request bodies.
func newFloor(baseURL string, pid int, fx fixture) (*graphQL, error) {
	g, err := newGraphQL(nameFloor, baseURL, pid, false, fx)
	if err != nil {
		return nil, err
	}
	g.urls = map[string]string{}
	for _, q := range queries {
		g.urls[q.Name] = baseURL + floorPath(q.Name)
	}
	if err := g.newClient(); err != nil {
		return nil, err
	}
	return g, nil
}
