package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/rs/cors"
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

// nameOperation is graph.Options.OnOperation: it records the operation's
// name for the access line.
func nameOperation(ctx context.Context, name string) {
	if s := statsFrom(ctx); s != nil {
		s.setOperation(name)
	}
}

// countingTransport counts the upstream calls of each request: every call
// made with the request's context adds one to its stats, retries included.
type countingTransport struct{ next http.RoundTripper }

// countCalls wraps the upstream client's transport with a counter.
func countCalls(next http.RoundTripper) http.RoundTripper { return countingTransport{next} }

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if s := statsFrom(r.Context()); s != nil {
		s.upstreamCalls.Add(1)
	}
	return t.next.RoundTrip(r)
}

// responseRecorder remembers the status and size of a response.
type responseRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *responseRecorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush sends what is buffered, for handlers that stream.
func (w *responseRecorder) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *responseRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// internalError is the body of a 500 after a panic: the GraphQL error shape
// with the code the error presenter uses, and nothing about the panic.
const internalError = `{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL"}}]}` + "\n"

// recoverPanics turns a panic in any handler into a 500 with a JSON error
// and an error log line with the stack. The response never carries the
// stack. A panic after the response started aborts the connection, so the
// client cannot take a truncated answer for a whole one.
func recoverPanics(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &responseRecorder{ResponseWriter: w}
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			log.LogAttrs(r.Context(), slog.LevelError, "panic serving a request",
				slog.String("request_id", w.Header().Get(requestIDHeader)),
				slog.String("path", r.URL.Path),
				slog.String("panic", fmt.Sprint(p)),
				slog.String("stack", string(debug.Stack())))
			if rec.status != 0 {
				panic(http.ErrAbortHandler)
			}
			h := w.Header()
			for _, k := range []string{"Content-Length", "Content-Encoding", "ETag", "Cache-Control"} {
				h.Del(k)
			}
			h.Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, internalError)
		}()
		next.ServeHTTP(rec, r)
	})
}

const requestIDHeader = "X-Request-Id"

type requestIDKey struct{}

// requestIDFrom returns the id withRequestID gave the request.
func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// withRequestID gives every request an id, sent back as X-Request-Id and
// logged with it. An id that a proxy in front already gave is kept when it
// is short and plain.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(requestIDHeader)
		if !plainID(id) {
			id = uuid.NewString()
		}
		w.Header().Set(requestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// plainID reports whether id is 1 to 128 letters, digits, '-', '_', '.' or ':'.
func plainID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:", c)
		if !ok {
			return false
		}
	}
	return true
}

// accessLog writes one line per request: id, method, path, status, duration,
// size, GraphQL operation name and number of upstream calls. It logs no
// header, query string or body, so no key can reach the log. Probes of
// /healthz and /readyz are logged at debug level, failures at error level.
func accessLog(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		stats := &requestStats{}
		r = r.WithContext(context.WithValue(r.Context(), statsKey{}, stats))
		rec := &responseRecorder{ResponseWriter: w}
		line := func(status int) {
			level := slog.LevelInfo
			switch {
			case status >= 500:
				level = slog.LevelError
			case r.URL.Path == "/healthz" || r.URL.Path == "/readyz":
				level = slog.LevelDebug
			}
			log.LogAttrs(r.Context(), level, "request",
				slog.String("request_id", requestIDFrom(r.Context())),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
				slog.Int64("bytes", rec.bytes),
				slog.String("operation", stats.operationName()),
				slog.Int64("upstream_calls", stats.upstreamCalls.Load()))
		}
		defer func() {
			if p := recover(); p != nil {
				status := rec.status
				if status == 0 {
					status = http.StatusInternalServerError
				}
				line(status)
				panic(p)
			}
		}()
		next.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		line(status)
	})
}

// withCORS lets the browser origins of the list call the gateway (see
// Config.CORSOrigins) and answers their preflight requests. The gateway
// takes keys from the Authorization header, never from cookies, so it does
// not allow credentials.
func withCORS(origins []string, next http.Handler) http.Handler {
	m := newOriginMatcher(origins)
	return cors.New(cors.Options{
		AllowOriginFunc: m.allow,
		AllowedMethods:  []string{http.MethodGet, http.MethodPost},
		AllowedHeaders:  []string{"Authorization", "Content-Type", "Accept", requestIDHeader},
		ExposedHeaders:  []string{requestIDHeader},
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

// withDeadline gives every request a deadline. The upstream calls made under
// it fail when it passes, and the GraphQL answer reports them as errors.
func withDeadline(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
