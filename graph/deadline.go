package graph

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/internal/gopool"
)

// deadlineGrace is how long after a request's deadline its handler has to
// start the answer itself: usually it does at once, with the data it got and
// an error for each field that ran out of time, which says more than a
// timeout does.
const deadlineGrace = time.Second

// guardDeadline makes the request's deadline hold for all its work, parsing
// and validation included, which do not look at the context: a request
// whose answer has not started by its deadline (plus deadlineGrace) is
// answered 504 REQUEST_TIMEOUT at once. The handler goes on in the
// background until it notices its context has ended, and nothing it writes
// then reaches the client, so the access log records what was sent. An
// answer that has started is left to finish. The handler runs on a
// goroutine kept from an earlier request (internal/gopool), whose stack has
// grown already.
func guardDeadline(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dl, ok := r.Context().Deadline()
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		gw := &guardedWriter{w: w, h: w.Header().Clone()}
		done := make(chan any, 1)
		gopool.Go(func() {
			defer func() { done <- recover() }()
			next.ServeHTTP(gw, r)
		})
		timer := time.NewTimer(time.Until(dl) + deadlineGrace)
		defer timer.Stop()
		select {
		case p := <-done:
			if p != nil {
				panic(p)
			}
			return
		case <-timer.C:
		}
		if gw.timeOut() {
			refuseRequest(w, r, http.StatusGatewayTimeout,
				codes.Errorf(codes.RequestTimeout, "the request did not finish in time"))
			go func() {
				if p := <-done; p != nil && p != http.ErrAbortHandler {
					log.Error("panic in a request that had timed out", "panic", p)
				}
			}()
			return
		}
		if p := <-done; p != nil {
			panic(p)
		}
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
	timedOut    bool
}

// timeOut takes the response from the handler unless it has started it,
// and reports whether it did.
func (g *guardedWriter) timeOut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.wroteHeader {
		return false
	}
	g.timedOut = true
	return true
}

func (g *guardedWriter) Header() http.Header { return g.h }

func (g *guardedWriter) WriteHeader(code int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writeHeader(code)
}

func (g *guardedWriter) writeHeader(code int) {
	if g.timedOut || g.wroteHeader {
		return
	}
	g.wroteHeader = true
	dst := g.w.Header()
	for k, v := range g.h {
		dst[k] = v
	}
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
