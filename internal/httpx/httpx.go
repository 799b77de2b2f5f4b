// Package httpx holds the HTTP plumbing both commands of this module share:
// the middleware (panic recovery, request ids, the access log, deadlines),
// a response recorder, and serving with a graceful shutdown.
package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// Recorder remembers the status and size of a response, and the first
// error writing it.
type Recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	err    error
}

// NewRecorder wraps w.
func NewRecorder(w http.ResponseWriter) *Recorder { return &Recorder{ResponseWriter: w} }

// Status is the status written so far, 0 before the first write.
func (w *Recorder) Status() int { return w.status }

// Bytes is the size of the body written so far.
func (w *Recorder) Bytes() int64 { return w.bytes }

// WriteHeader records the first final status.
func (w *Recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *Recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// WriteErr is the first error writing the body that the Recorder w is or
// wraps (through Unwrap, as http.ResponseController finds the connection's
// writer) saw: the answer was cut off there (the connection's write deadline
// passed, or the client went away). It is nil when there was none, or when
// no Recorder records w.
func WriteErr(w http.ResponseWriter) error {
	for {
		switch x := w.(type) {
		case *Recorder:
			return x.err
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil
		}
	}
}

// Flush sends what is buffered, for handlers that stream.
func (w *Recorder) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer (to
// flush, set deadlines or hijack it).
func (w *Recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Recover turns a panic in next into an error line with the stack and a 500
// whose body answer writes (the command's own error shape); the response
// never carries the stack. A panic after the response started aborts the
// connection, so the client cannot take a truncated answer for a whole one.
func Recover(log *slog.Logger, answer func(http.ResponseWriter, *http.Request), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := NewRecorder(w)
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			log.LogAttrs(r.Context(), slog.LevelError, "panic serving a request",
				// Recover sits outside RequestID, whose id is on the response.
				slog.String("request_id", w.Header().Get(RequestIDHeader)),
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
			answer(w, r)
		}()
		next.ServeHTTP(rec, r)
	})
}

// RequestIDHeader carries the request id in both directions.
const RequestIDHeader = "X-Request-Id"

type requestIDKey struct{}

// RequestIDFrom returns the id RequestID gave the request, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// RequestID gives every request an id, sent back as X-Request-Id and kept
// in the context for logs and errors. An id a proxy in front already gave
// is kept when it is short and plain.
func RequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !PlainID(id) {
			id = uuid.NewString()
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// PlainID reports whether id is 1 to 128 letters, digits, '-', '_', '.' or ':'.
func PlainID(id string) bool {
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

// AccessLogOptions shape the access log.
type AccessLogOptions struct {
	// Quiet lists paths logged at debug level (health probes), so that
	// probes do not flood the log.
	Quiet []string
	// Attrs, when not nil, adds attributes to a request's line; it is called
	// once the response is done, with the request as the middleware got it.
	Attrs func(*http.Request) []slog.Attr
}

// AccessLog writes one line per request: its id, method, path, status,
// duration and size, plus o.Attrs. It logs no header, query string or body,
// so no key can reach the log. Server errors are logged at error level.
// A request whose connection was dropped before any answer is logged with
// status 0 and a note saying so.
func AccessLog(log *slog.Logger, o AccessLogOptions, next http.Handler) http.Handler {
	quiet := map[string]bool{}
	for _, p := range o.Quiet {
		quiet[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := NewRecorder(w)
		line := func(status int) {
			level := slog.LevelInfo
			switch {
			case status >= 500:
				level = slog.LevelError
			case rec.err != nil:
				level = slog.LevelWarn
			case quiet[r.URL.Path]:
				level = slog.LevelDebug
			}
			if !log.Enabled(r.Context(), level) {
				return
			}
			attrs := make([]slog.Attr, 0, 10)
			if id := RequestIDFrom(r.Context()); id != "" {
				attrs = append(attrs, slog.String("request_id", id))
			}
			attrs = append(attrs,
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
				slog.Int64("bytes", rec.bytes))
			switch {
			case status == 0:
				attrs = append(attrs, slog.String("note", "the handler wrote nothing: the connection was dropped, or an empty 200 went out"))
			case rec.err != nil:
				attrs = append(attrs, slog.Bool("cut_off", true), slog.String("note", cutOffNote(rec.err)))
			}
			if o.Attrs != nil {
				attrs = append(attrs, o.Attrs(r)...)
			}
			// The record's pc is 0: an access line's source is this
			// middleware, always, and Logger.LogAttrs would walk the stack
			// for it on every request.
			rl := slog.NewRecord(time.Now(), level, "request", 0)
			rl.AddAttrs(attrs...)
			_ = log.Handler().Handle(r.Context(), rl)
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
		line(rec.status)
	})
}

// cutOffNote says why an answer was cut off, from the error that stopped
// writing it.
func cutOffNote(err error) string {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return "the answer was cut off: the client had not taken it by the request's deadline"
	}
	return "the answer was cut off: the connection failed while it was written"
}

// Deadline gives every request a deadline; work done under the request's
// context (upstream calls above all) ends when it passes.
func Deadline(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// WriteJSON answers v as JSON with the status, never cached.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Serve serves srv on ln until ctx ends, then stops accepting connections
// at once and lets the requests in flight finish for up to grace; what is
// still running then is cut off and reported.
//
// A request a client had begun sending on a new connection when the
// shutdown began is among those in flight. net/http's Shutdown drops a
// request it finishes reading after the shutdown has begun, closing its
// connection without an answer, so the drain does not start with it: the
// listener is closed and keep-alive turned off (which closes the idle
// connections, and has every later answer say Connection: close), and each
// connection that is still reading its first request is given up to
// newConnWait to finish it and reach a handler; Shutdown then has only
// handlers to wait for, each for up to grace. (A request begun on a
// kept-alive connection is its client's to send again, as with any HTTP
// server: the connection was idle, and is closed.)
//
// overdue, when not nil, reports how many requests in flight have had
// their whole answer sent while their handler runs on (graph's deadline
// guard answers a request past its deadline so, and its handler ends when
// it notices). When only such requests are left at the end of the grace,
// every request has been answered: Serve closes the server, logs how many
// handlers were still running, and returns nil.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration, log *slog.Logger, overdue func() int64) error {
	var conns, inFlight atomic.Int64 // connections open, requests in handlers
	next := srv.Handler
	if next == nil {
		next = http.DefaultServeMux
	}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		next.ServeHTTP(w, r)
	})
	hook := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			conns.Add(-1)
		}
		if hook != nil {
			hook(c, s)
		}
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: no new connections; draining requests in flight")
	_ = ln.Close()
	<-served // Serve has stopped accepting (and let go of ln, which Shutdown would close again); the connections go on
	srv.SetKeepAlivesEnabled(false)
	for reading := time.Now().Add(min(newConnWait, grace)); conns.Load() > inFlight.Load() && time.Now().Before(reading); {
		time.Sleep(10 * time.Millisecond)
	}
	// Every handler gets the whole grace, one that started late in the wait
	// above included.
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		if overdue != nil {
			if n := overdue(); n > 0 && inFlight.Load() <= n {
				log.Warn("stopped: every request answered; handlers of requests answered at their deadline were still running",
					"handlers", n)
				return nil
			}
		}
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped: every request answered")
	return nil
}

// newConnWait is how long a shutdown waits for the connections that are
// reading a request to reach a handler; net/http's Shutdown, which comes
// next, treats a connection that has sent nothing for as long as idle.
const newConnWait = 5 * time.Second
