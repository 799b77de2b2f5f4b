package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rs/cors"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/upstream"

	"github.com/costgw/gateway/internal/httpx"
)

// requestStats is what one request did, gathered while it runs for its
// access line. The counter is bumped from the request's resolver goroutines.
type requestStats struct {
	upstreamCalls atomic.Int64

	mu        sync.Mutex
	operation string
}

func (s *requestStats) setOperation(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.operation = name
}

func (s *requestStats) operationName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.operation
}

type statsKey struct{}

// statsFrom returns the stats of the request ctx belongs to, or nil.
func statsFrom(ctx context.Context) *requestStats {
	s, _ := ctx.Value(statsKey{}).(*requestStats)
	return s
}

// withStats gives every request the stats its access line reports.
func withStats(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), statsKey{}, &requestStats{})))
	})
}

// statsAttrs are the access line's GraphQL operation name and number of
// upstream calls (retries included).
func statsAttrs(r *http.Request) []slog.Attr {
	s := statsFrom(r.Context())
	if s == nil {
		return nil
	}
	return []slog.Attr{
		slog.String("operation", s.operationName()),
		slog.Int64("upstream_calls", s.upstreamCalls.Load()),
	}
}

// nameOperation is graph.Options.OnOperation: it records the operation's
// name for the access line.
func nameOperation(ctx context.Context, name string) {
	if s := statsFrom(ctx); s != nil {
		s.setOperation(name)
	}
}

// countCalls is the upstream client's observer: every attempt it sends
// counts toward its request's access line and the GraphQL answer's
// extensions.cost, retries included.
func countCalls(ctx context.Context, _ upstream.Attempt) (context.Context, func(upstream.AttemptResult)) {
	if s := statsFrom(ctx); s != nil {
		s.upstreamCalls.Add(1)
	}
	graph.CountUpstreamCall(ctx)
	return ctx, nil
}

// withCORS lets the browser origins of the list call the gateway (see
// Config.CORSOrigins) and answers their preflight requests. The gateway
// takes keys from the Authorization header, never from cookies, so it does
// not allow credentials.
func withCORS(origins, headers []string, next http.Handler) http.Handler {
	m := newOriginMatcher(origins)
	return cors.New(cors.Options{
		AllowOriginFunc: m.allow,
		AllowedMethods:  []string{http.MethodGet, http.MethodPost},
		AllowedHeaders:  headers,
		ExposedHeaders:  []string{httpx.RequestIDHeader},
		MaxAge:          600,
	}).Handler(next)
}

// originMatcher decides whether a browser origin may call.
type originMatcher struct {
	any       bool
	localhost bool
	exact     map[string]bool
	patterns  [][2]string // prefix and suffix around the *
}

func newOriginMatcher(origins []string) originMatcher {
	m := originMatcher{exact: map[string]bool{}}
	for _, o := range origins {
		o = strings.ToLower(strings.TrimSuffix(o, "/"))
		switch {
		case o == "*":
			m.any = true
		case o == corsLocalhost:
			m.localhost = true
		case strings.Contains(o, "*"):
			prefix, suffix, _ := strings.Cut(o, "*")
			m.patterns = append(m.patterns, [2]string{prefix, suffix})
		default:
			m.exact[o] = true
		}
	}
	return m
}

func (m originMatcher) allow(origin string) bool {
	o := strings.ToLower(origin)
	if m.any || m.exact[o] {
		return o != ""
	}
	for _, p := range m.patterns {
		if len(o) > len(p[0])+len(p[1]) && strings.HasPrefix(o, p[0]) && strings.HasSuffix(o, p[1]) {
			return true
		}
	}
	if m.localhost {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || (u.Path != "" && u.Path != "/") {
			return false
		}
		switch u.Hostname() {
		case "localhost", "127.0.0.1", "::1":
			return true
		}
	}
	return false
}

// checkOrigin reports whether o is a valid entry of -cors-origins.
func checkOrigin(o string) error {
	if o == "*" || o == corsLocalhost {
		return nil
	}
	if strings.Count(o, "*") > 1 {
		return fmt.Errorf("%q has more than one *", o)
	}
	u, err := url.Parse(strings.Replace(o, "*", "x", 1))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q is not an origin such as https://app.example.com", o)
	}
	return nil
}
