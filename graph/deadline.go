package graph

import (
	"log/slog"
	"maps"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/costgw/gateway/graph/codes"
)

// deadlineGrace is how long after a request's deadline its handler has to
// start the answer itself: usually it does at once, with the data it got and
// an error for each field that ran out of time, which says more than a
// timeout does.
const deadlineGrace = time.Second

// guardDeadline makes the request's deadline hold for all its work, parsing
// and validation included, which do not look at the context: a request
// whose answer has not started by its deadline (plus deadlineGrace) is
// answered 504 REQUEST_TIMEOUT then, sent at once and with Connection:
// close. The handler goes on until it notices its context has ended, and
// nothing it writes then reaches the client, so the access log records
// what was sent. An answer that has started is left to finish.
//
// The handler runs on the request's own goroutine, as net/http calls it;
// the timeout's answer is written from the timer's. The request's access
// line, span and metrics are written when the handler ends, with the 504
// that was sent; a graceful shutdown does not wait for such a handler
// (Options.Overdue counts them). The handler does not run on a goroutine of
// its own so that the guard could return at the deadline: that hand-off
// would cost every request CPU (docs/performance.md, the tenth pass) to get
// back a connection that a client told Connection: close does not use
// again.
func guardDeadline(log *slog.Logger, overdue *atomic.Int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dl, ok := r.Context().Deadline()
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		gw := &guardedWriter{w: w, h: w.Header().Clone(), overdue: overdue}
		timer := time.AfterFunc(time.Until(dl)+deadlineGrace, func() { gw.answerLate(r) })
		defer func() {
			timer.Stop()
			timedOut := gw.finish()
			p := recover()
			switch {
			case p == nil:
			case !timedOut:
				panic(p)
			case p != http.ErrAbortHandler:
				log.Error("panic in a request that had timed out", "panic", p, "stack", string(debug.Stack()))
			}
		}()
		next.ServeHTTP(gw, r)
	})
}

// guardedWriter is the handler's side of a guarded response: it keeps its
// own header until the answer starts, and drops everything once the guard
// has answered in its place.
type guardedWriter struct {
	w           http.ResponseWriter
	mu          sync.Mutex
	h           http.Header
	wroteHeader bool
	timedOut    bool // the guard answered in the handler's place
	finished    bool // the handler has returned
	overdue     *atomic.Int64
}

// answerLate answers 504 REQUEST_TIMEOUT in the handler's place, unless
// the handler has started its answer or ended; the answer is sent at once,
// since the handler may not end for a while.
func (g *guardedWriter) answerLate(r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.wroteHeader || g.finished {
		return
	}
	g.timedOut = true
	g.overdue.Add(1)
	g.w.Header().Set("Connection", "close")
	// What the client gets is the outcome, even when the executor had
	// recorded its own before the handler could write it.
	InfoFrom(r.Context()).overrule(codes.RequestTimeout)
	codes.Write(g.w, r, http.StatusGatewayTimeout,
		codes.Errorf(codes.RequestTimeout, "the request did not finish in time"))
	_ = http.NewResponseController(g.w).Flush()
}

// finish ends the guard when its handler returns, and reports whether the
// guard answered in its place. Once it has returned the guard writes no
// more: answerLate holds the lock while it writes.
func (g *guardedWriter) finish() (timedOut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.finished = true
	if g.timedOut {
		g.overdue.Add(-1)
	}
	return g.timedOut
}

func (g *guardedWriter) Header() http.Header { return g.h }

func (g *guardedWriter) WriteHeader(code int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writeHeader(code)
}

// writeHeader passes the handler's status and header on, once. An interim
// (1xx) answer, such as 103 Early Hints, is passed on with the handler's
// header without starting the answer, which the guard may then still give
// in the handler's place, with none of the handler's header.
func (g *guardedWriter) writeHeader(code int) {
	if g.timedOut || g.wroteHeader {
		return
	}
	dst := g.w.Header()
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		before := dst.Clone()
		maps.Copy(dst, g.h)
		g.w.WriteHeader(code)
		clear(dst)
		maps.Copy(dst, before)
		return
	}
	g.wroteHeader = true
	maps.Copy(dst, g.h)
	g.w.WriteHeader(code)
}

func (g *guardedWriter) Write(b []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	g.writeHeader(http.StatusOK)
	return g.w.Write(b)
}

// Flush sends what is buffered, for answers that stream.
func (g *guardedWriter) Flush() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.timedOut {
		g.writeHeader(http.StatusOK)
		_ = http.NewResponseController(g.w).Flush()
	}
}
