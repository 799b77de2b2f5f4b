package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/costgw/gateway/internal/httpx"
	"github.com/costgw/gateway/upstream"
)

// probePaths are the health endpoints that load balancers and orchestrators
// call every few seconds: their access lines are at debug level and they
// make no traces.
var probePaths = []string{"/healthz", "/readyz"}

// readinessTimeout bounds the upstream probe of /readyz (or the upstream
// timeout, if shorter): a probe that waits longer than its prober is useless.
const readinessTimeout = 2 * time.Second

// unreadyAfter is how many probes in a row must fail before a gateway that
// was ready says it is not. One failed probe says little when the upstream
// answers, say, 15 % of calls with a 5xx: with a single-probe rule /readyz
// would flap, and a load balancer would pull every replica at once. Three in
// a row at 15 % happens for about one probe in 300; an upstream that is down
// fails them all and is seen within three probe periods. One success makes
// the gateway ready again.
const unreadyAfter = 3

// healthz is the liveness probe: the process serves HTTP. It does not ask
// the upstream, so an upstream outage does not get the gateway restarted.
func healthz(w http.ResponseWriter, _ *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readiness is the readiness probe: the upstream answers. Each request of
// /readyz probes the upstream once; the gateway is ready from the first
// probe that succeeds until unreadyAfter probes in a row fail. The answer
// names neither the upstream's URL nor the error, which go to the log.
type readiness struct {
	probe   func(context.Context) error
	timeout time.Duration
	log     *slog.Logger

	mu       sync.Mutex
	ready    bool // a probe has succeeded, and fewer than unreadyAfter failed since
	failures int  // probes failed in a row
}

func newReadiness(probe func(context.Context) error, timeout time.Duration, log *slog.Logger) *readiness {
	return &readiness{probe: probe, timeout: timeout, log: log}
}

// check probes the upstream once and records the outcome; it returns
// whether the gateway is ready after it, and the probe's error.
func (rd *readiness) check(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, rd.timeout)
	defer cancel()
	err := rd.probe(ctx)
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if err == nil {
		rd.ready, rd.failures = true, 0
	} else if rd.failures++; rd.failures >= unreadyAfter {
		rd.ready = false
	}
	return rd.ready, err
}

func (rd *readiness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ready, err := rd.check(r.Context())
	if err != nil {
		attrs := []slog.Attr{slog.String("error", err.Error()), slog.Bool("ready", ready)}
		if id := httpx.RequestIDFrom(r.Context()); id != "" { // the admin listener gives none
			attrs = append(attrs, slog.String("request_id", id))
		}
		rd.log.LogAttrs(r.Context(), slog.LevelWarn, "readiness: the upstream probe failed", attrs...)
	}
	if !ready {
		httpx.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "upstream": probeSummary(err)})
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// checkUpstream probes the upstream once at start and says, with the cause,
// when it does not answer: a wrong -upstream shows in the first lines.
func checkUpstream(ctx context.Context, rd *readiness, log *slog.Logger) {
	if _, err := rd.check(ctx); err != nil {
		log.Warn("the upstream does not answer; /readyz reports unavailable until it does", "error", err.Error())
	}
}

// probeSummary says what a failed probe met, without the upstream's
// address: the log line has the cause.
func probeSummary(err error) string {
	var ue *upstream.Error
	switch {
	case errors.As(err, &ue) && ue.Status >= 500:
		return fmt.Sprintf("answered %d", ue.Status)
	case err != nil:
		return "unreachable"
	}
	return "answering"
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
	httpx.WriteJSON(w, http.StatusOK, readBuildInfo())
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
