package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// readinessTimeout bounds the upstream probe of /readyz (or the upstream
// timeout, if shorter): a probe that waits longer than its prober is useless.
const readinessTimeout = 2 * time.Second

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// healthz is the liveness probe: the process serves HTTP. It does not ask
// the upstream, so an upstream outage does not get the gateway restarted.
func healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readiness is the readiness probe: the upstream answers. It sends a GET of
// the budgets list without a key; any answer below 500 (401 from the real
// API) means the upstream is there. The answer names neither the upstream's
// URL nor the error, which go to the log.
func readiness(rt http.RoundTripper, upstreamURL string, timeout time.Duration, log *slog.Logger) http.Handler {
	hc := &http.Client{Transport: rt, Timeout: timeout}
	probe := strings.TrimSuffix(upstreamURL, "/") + "/v1/budgets"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, probe, nil)
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "upstream": "invalid URL"})
			return
		}
		req.Header.Set("Accept", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			log.LogAttrs(r.Context(), slog.LevelWarn, "readiness: the upstream is unreachable",
				slog.String("request_id", requestIDFrom(r.Context())), slog.String("error", err.Error()))
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "upstream": "unreachable"})
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if resp.StatusCode >= 500 {
			log.LogAttrs(r.Context(), slog.LevelWarn, "readiness: the upstream answers with a server error",
				slog.String("request_id", requestIDFrom(r.Context())), slog.Int("status", resp.StatusCode))
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{
				"status":   "unavailable",
				"upstream": fmt.Sprintf("answered %d", resp.StatusCode),
			})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
}

// buildInfo is what /version and -version report, read from the build
// information the Go toolchain writes into the binary.
type buildInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: "unknown", Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := info.Main.Version; v != "" {
		b.Version = v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the -version line.
func (b buildInfo) String() string {
	s := "costgw " + b.Version
	if b.Revision != "" {
		s += " revision " + b.Revision
		if b.Modified {
			s += " (modified)"
		}
	}
	if b.Time != "" {
		s += " of " + b.Time
	}
	return s + " built with " + b.Go
}

// version answers the build information as JSON.
func version(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, readBuildInfo())
}

// healthCheck GETs /healthz of the gateway listening on listen, through
// loopback, and fails unless it answers 200.
func healthCheck(ctx context.Context, listen string) error {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("healthcheck: -listen %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: /healthz answered %s", resp.Status)
	}
	return nil
}
