package upstream

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// An Observer is told of every attempt the client sends to the upstream, so
// that an access log can count a request's upstream calls, a metrics
// registry can count and time them, and a tracer can give each its span.
//
// The client calls it once per attempt handed to the transport, after every
// local check has passed: an attempt the client refuses itself (an invalid
// header value, an open circuit breaker, no free in-flight slot) is never
// observed, and the transport never replays an attempt on its own (see
// docs/resilience.md), so the number of calls is the number of requests the
// upstream could have seen. The returned context (nil: ctx) becomes the
// attempt's request context, so a span started in it is what
// WithRequestHeaders (or a tracing RoundTripper) propagates as traceparent; it
// should derive from ctx, whose cancellation the attempt must follow. done,
// when not nil, is called exactly once with the outcome, after the answer
// is read or the attempt has failed; it runs on the calling goroutine, so
// it should be cheap.
//
// Neither ctx (from which the caller's bearer key is hidden) nor Attempt nor
// AttemptResult carries the bearer key, a URL or a header.
type Observer func(ctx context.Context, a Attempt) (attemptCtx context.Context, done func(AttemptResult))

// WithObserver sets the observer of every attempt (none otherwise). With no
// observer the client does no work for one.
func WithObserver(o Observer) Option {
	return func(c *Client) error { c.observer = o; return nil }
}

// WithRequestHeaders has add put headers of its own on the request of every
// attempt, Ping's included, just before it is sent: add gets the attempt's
// context (the observer's, which may carry a trace span; the caller's
// bearer key is hidden from it as from the observer's) and a HeaderSetter
// that adds a header unless the client sets it itself, so that it can
// neither read nor replace nor add the client's own (Authorization among
// them, even on Ping, which sends none). A W3C
// traceparent is such a header: propagation.TextMapPropagator.Inject writes
// through a carrier around the setter.
//
// This is how to add a header without a RoundTripper around the HTTP
// client's transport: with a Timeout, net/http cancels a request through
// its context only when the transport is its own *http.Transport, and
// around any other starts a timer and a goroutine for every request.
func WithRequestHeaders(add func(ctx context.Context, h HeaderSetter)) Option {
	return func(c *Client) error { c.headers = add; return nil }
}

// A HeaderSetter adds a header to an upstream request, unless it is one the
// client sets itself.
type HeaderSetter interface{ Set(key, value string) }

// ownHeaders are the headers the client sets itself, on some requests if not
// on all (Ping sends no Authorization, a GET no Content-Type): no
// WithRequestHeaders func may add them.
var ownHeaders = map[string]bool{"Authorization": true, "Accept": true, "User-Agent": true, "Content-Type": true,
	"Idempotency-Key": true}

// addOnly is the HeaderSetter of a request's headers.
type addOnly http.Header

func (h addOnly) Set(key, value string) {
	key = textproto.CanonicalMIMEHeaderKey(key)
	if _, set := h[key]; !set && !ownHeaders[key] {
		h[key] = []string{value}
	}
}

// addHeaders has the WithRequestHeaders func, if any, add its headers to req.
func (c *Client) addHeaders(ctx context.Context, req *http.Request) {
	if c.headers != nil {
		c.headers(keylessContext{ctx}, addOnly(req.Header))
	}
}

// Attempt describes one attempt of a call.
type Attempt struct {
	// Op is the contract's operation id, such as "getBudget"; "ping" for Ping.
	Op string
	// Method is the HTTP method.
	Method string
	// Route is the operation's path template below the base URL, such as
	// "/v1/budgets/{id}": the same for every id, so it fits a metrics label.
	Route string
	// Number counts the attempts of one call from 1.
	Number int
	// ServerAddress and ServerPort are the upstream's host and port
	// (Client.Server), for the spans' server.address and server.port.
	ServerAddress string
	ServerPort    int
	// Cache is the call's cache outcome: CacheMiss or CacheRefresh for an
	// attempt sent; CacheHit or CacheStale for a call answered from the
	// cache, observed as an attempt numbered 0 that sent nothing; "" when
	// the cache does not keep the operation, or there is none.
	Cache string
}

// AttemptResult is the outcome of an attempt.
type AttemptResult struct {
	Attempt
	// Status is the HTTP status of the answer; 0 when none arrived.
	Status int
	// RequestID is the upstream's request id (the error envelope's, else the
	// X-Request-Id header), scrubbed like every text from the upstream.
	RequestID string
	// Class sorts the outcome; ClassOK for a decoded success answer.
	Class Class
	// Sent reports whether the request was written to a connection, so the
	// upstream may have seen it (false for ClassConnect and ClassLocal).
	Sent bool
	// Duration runs from handing the request to the transport to the end of
	// reading the answer.
	Duration time.Duration
}

// Class sorts the outcome of an attempt into a few kinds, fit for a metrics
// label or a log field.
type Class string

// The classes of attempt outcomes.
const (
	// ClassOK is a success answer, read and decoded.
	ClassOK Class = "ok"
	// ClassClientError is a 4xx answer other than 429.
	ClassClientError Class = "client_error"
	// ClassRateLimited is a 429 answer.
	ClassRateLimited Class = "rate_limited"
	// ClassServerError is a 5xx answer.
	ClassServerError Class = "server_error"
	// ClassBadResponse is a 2xx answer that could not be read as the
	// operation's answer, or an answer of a status the client does not use.
	ClassBadResponse Class = "bad_response"
	// ClassConnect is an attempt that got no connection (refused, DNS, TLS):
	// nothing was sent.
	ClassConnect Class = "connect_error"
	// ClassNoResponse is an attempt that was sent and got no complete answer:
	// the connection dropped, or the answer broke off.
	ClassNoResponse Class = "no_response"
	// ClassTimeout is an attempt that ran out of its own time (WithTimeout).
	ClassTimeout Class = "timeout"
	// ClassCanceled is an attempt whose caller went away (its context ended).
	ClassCanceled Class = "canceled"
	// ClassLocal is an attempt the transport refused before any connection
	// (a RoundTripper of the caller's, or a header the client did not check):
	// nothing was sent and it is not counted as an upstream failure.
	ClassLocal Class = "local_error"
)

// keylessContext hides the caller's bearer key from code the client hands a
// context to (the observer, and through it the transport).
type keylessContext struct{ context.Context }

func (k keylessContext) Value(key any) any {
	if _, ok := key.(apiKeyContextKey); ok {
		return nil
	}
	return k.Context.Value(key)
}

// WithLogger sets where failed attempts are logged (nowhere otherwise).
//
// A failed or malformed upstream answer is logged at most once for each
// context made by WithLogScope (the gateway makes one a request): its first
// failed attempt, saying whether the client will retry; FailedAttempts
// counts them all. And at most LogBurst lines in LogEvery are written in
// all, the next one after saying how many were left out ("suppressed"), so
// that an upstream that fails every call writes ten lines a second, not one
// an attempt.
// Upstream failures (5xx, 429, no answer, an answer that cannot be read) are
// logged at Warn; 4xx answers, which are the caller's to fix, at Info. A
// line carries the operation, the route template, the attempt number, the
// status, the upstream's host and port (for the operator; an error to a
// caller never has them), the upstream's request id, the error code and a
// short cause: for an answer with a body, an excerpt of at most 256 bytes,
// scrubbed of the bearer key, the upstream's address, URLs and header
// echoes. It never carries a header or the URL's path. A local refusal
// (nothing sent) is the caller's error, not an upstream answer, and is not
// logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *Client) error {
		if l == nil {
			return errors.New("upstream: nil logger")
		}
		c.log = l
		return nil
	}
}

// outcome is what one attempt came to, for the observer, the log, the
// breakers and the retry loop.
type outcome struct {
	class   Class
	status  int
	reqID   string
	sent    bool   // the request was written to a connection
	excerpt string // scrubbed start of the answer body, for the log
}

// classify sorts an attempt's error (nil for success) into a Class. ctx is
// the caller's context: when it has ended, the attempt failed because the
// caller went away, whatever the transport made of it.
func classify(ctx context.Context, err error, o *outcome) Class {
	if err == nil {
		return ClassOK
	}
	var e *Error
	if !errors.As(err, &e) {
		return ClassLocal
	}
	switch {
	case e.Code == codeBadResponse || (e.Status >= 100 && e.Status < 200) || (e.Status >= 300 && e.Status < 400):
		return ClassBadResponse
	case e.Status == 429:
		return ClassRateLimited
	case e.Status >= 500:
		return ClassServerError
	case e.Status >= 400:
		return ClassClientError
	case ctx.Err() != nil:
		return ClassCanceled
	case e.Code == codeRefused || e.Code == codeMalformedKey:
		return ClassLocal
	}
	var ne net.Error
	if errors.As(e.Err, &ne) && ne.Timeout() {
		return ClassTimeout
	}
	if !o.sent {
		return ClassConnect
	}
	return ClassNoResponse
}

// At most LogBurst lines of failed attempts are written in each LogEvery
// (WithLogger).
const (
	LogEvery = time.Second
	LogBurst = 10
)

// logScope is what one WithLogScope context has logged.
type logScope struct {
	failed atomic.Int64
	logged atomic.Bool
}

type logScopeKey struct{}

// WithLogScope returns a context whose calls log at most one failed
// attempt (WithLogger), and count them all (FailedAttempts).
func WithLogScope(ctx context.Context) context.Context {
	return context.WithValue(ctx, logScopeKey{}, &logScope{})
}

// FailedAttempts is how many attempts of ctx's calls failed, retries and
// answers of 4xx included, since WithLogScope made it (0 without one).
func FailedAttempts(ctx context.Context) int64 {
	if s, _ := ctx.Value(logScopeKey{}).(*logScope); s != nil {
		return s.failed.Load()
	}
	return 0
}

// logRate bounds a client's lines of failed attempts to LogBurst in each
// window of LogEvery.
type logRate struct {
	mu         sync.Mutex
	now        func() time.Time // time.Now; a test's clock
	window     time.Time        // the start of the current window
	lines      int              // written in it
	suppressed int64            // left out since the last line written
}

// allow reports whether a line may be written now, and how many were left
// out before it; when not, it counts this one as left out.
func (r *logRate) allow() (bool, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.now != nil {
		now = r.now()
	}
	if now.Sub(r.window) >= LogEvery {
		r.window, r.lines = now, 0
	}
	if r.lines >= LogBurst {
		r.suppressed++
		return false, 0
	}
	r.lines++
	n := r.suppressed
	r.suppressed = 0
	return true, n
}

// logAttempt writes the line of a failed attempt, unless its context has
// logged one already or the client has written LogBurst in this LogEvery.
func (c *Client) logAttempt(ctx context.Context, a Attempt, o *outcome, err error, retrying bool) {
	if s, _ := ctx.Value(logScopeKey{}).(*logScope); s != nil {
		s.failed.Add(1)
		if s.logged.Swap(true) {
			return
		}
	}
	level := slog.LevelWarn
	if o.class == ClassClientError {
		level = slog.LevelInfo
	}
	if !c.log.Enabled(ctx, level) {
		return
	}
	ok, suppressed := c.logRate.allow()
	if !ok {
		return
	}
	attrs := []slog.Attr{
		slog.String("op", a.Op),
		slog.String("method", a.Method),
		slog.String("route", a.Route),
		slog.String("server", c.serverAddr),
		slog.Int("attempt", a.Number),
		slog.Int("status", o.status),
		slog.String("class", string(o.class)),
		slog.Bool("retrying", retrying),
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int64("suppressed", suppressed))
	}
	var e *Error
	if errors.As(err, &e) {
		attrs = append(attrs, slog.String("code", e.Code))
		if e.RequestID != "" {
			attrs = append(attrs, slog.String("request_id", e.RequestID))
		}
		attrs = append(attrs, slog.String("cause", e.cause()))
	}
	if o.excerpt != "" {
		attrs = append(attrs, slog.String("body", o.excerpt))
	}
	c.log.LogAttrs(keylessContext{ctx}, level, "upstream call failed", attrs...)
}

// cause is a short account of what went wrong, for a log line: the Error's
// text without the "upstream: op:" prefix (the line has the op already).
func (e *Error) cause() string {
	switch {
	case e.Status == 0 && e.Err != nil:
		return e.Message + ": " + e.Err.Error()
	case e.Err != nil:
		return e.Err.Error()
	}
	return e.Message
}

// discardLogger is the default logger: it logs nothing, cheaply.
var discardLogger = slog.New(slog.DiscardHandler)

// excerptOf returns the start of an answer body for a log line, scrubbed.
func excerptOf(s scrubber, body []byte) string {
	if len(body) == 0 {
		return ""
	}
	if len(body) > 2*maxExcerptLen {
		body = body[:2*maxExcerptLen] // scrubbing may shorten it; text caps it
	}
	return s.text(string(body), maxExcerptLen, "[withheld: "+strconv.Itoa(len(body))+" bytes]")
}

// prefixReader keeps the first bytes read through it, for a log line's
// excerpt of an answer that could not be decoded, and remembers a read
// error other than io.EOF, so a broken-off answer can be told from a
// malformed one.
type prefixReader struct {
	r    io.Reader
	err  error
	head [maxExcerptLen]byte
	n    int
}

func (p *prefixReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if p.n < len(p.head) {
		p.n += copy(p.head[p.n:], b[:n])
	}
	if err != nil && err != io.EOF {
		p.err = err
	}
	return n, err
}
