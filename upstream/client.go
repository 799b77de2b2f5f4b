// Package upstream is a typed client of the Cost Management REST API
// (docs/upstream.md describes the part the gateway uses): one Client, one
// service per area, one method per operation of the contract.
//
// The client holds no credentials. Every call takes the caller's bearer key
// from its context (WithAPIKey), so one Client serves any number of callers
// and a key never outlives the request that brought it. A call whose context
// has no key fails with ErrNoAPIKey before anything is sent.
package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// DefaultTimeout bounds one attempt of one call, answer body included.
const DefaultTimeout = 15 * time.Second

// maxSuccessBody caps a success answer. The largest page the contract allows
// (200 records) is far below it.
const maxSuccessBody = 32 << 20

// Client calls the Cost Management API. It is safe for concurrent use.
type Client struct {
	base       *url.URL
	http       *http.Client
	userAgent  string
	retry      RetryPolicy
	newKey     func() string
	retryQuota *retryQuota
	breakers   *breakers
	inflight   chan struct{}
	observer   Observer
	headers    func(context.Context, HeaderSetter)
	log        *slog.Logger
	logRate    logRate
	cache      *Cache // nil: none
	// serverHost and serverPort are the upstream's, its URL's port or its
	// scheme's; serverAddr is the two as host:port.
	serverHost string
	serverPort int
	serverAddr string
	// seed keys the hash that names a caller to its circuit breaker, so the
	// breakers hold no bearer key, and no one can aim at another's breaker.
	seed maphash.Seed

	Recommendations *RecommendationsService
	Anomalies       *AnomaliesService
	Explorer        *ExplorerService
	Budgets         *BudgetsService
	Notifications   *NotificationsService
}

// An Option configures a Client.
type Option func(*Client) error

// WithHTTPClient replaces the HTTP client. Its Timeout should not be zero.
// The client keeps a copy, so a later WithTimeout leaves hc as it was.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return errors.New("upstream: nil http.Client")
		}
		cp := *hc
		c.http = &cp
		return nil
	}
}

// WithTimeout sets the timeout of one attempt (DefaultTimeout otherwise).
func WithTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("upstream: timeout must be positive, got %v", d)
		}
		c.http.Timeout = d
		return nil
	}
}

// WithUserAgent sets the User-Agent header. It must be printable ASCII.
func WithUserAgent(ua string) Option {
	return func(c *Client) error {
		if err := checkHeaderValue("User-Agent", ua); err != nil {
			return err
		}
		c.userAgent = ua
		return nil
	}
}

// WithRetry sets the retry policy (DefaultRetryPolicy otherwise).
func WithRetry(p RetryPolicy) Option {
	return func(c *Client) error {
		if p.MaxAttempts < 1 {
			return fmt.Errorf("upstream: MaxAttempts must be at least 1, got %d", p.MaxAttempts)
		}
		c.retry = p
		return nil
	}
}

// WithIdempotencyKeys sets the generator of Idempotency-Keys for writes whose
// caller gave none (random UUIDs otherwise). A generated key is checked like
// a caller's: one that breaks the rules refuses the write before sending.
func WithIdempotencyKeys(f func() string) Option {
	return func(c *Client) error { c.newKey = f; return nil }
}

// NewTransport returns a transport sized for fan-out: one gateway request can
// send dozens of concurrent calls to the same host, and they should reuse
// warm connections instead of opening new ones.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	t.ResponseHeaderTimeout = DefaultTimeout
	return t
}

// NewClient returns a client of the API at baseURL, which may carry a path
// prefix (https://example.com/api); operation paths (/v1/…) are appended to it.
func NewClient(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstream: base URL %q is not an absolute http(s) URL", baseURL)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("upstream: base URL must not carry credentials, a query or a fragment")
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	c := &Client{
		base:       u,
		http:       &http.Client{Transport: NewTransport(), Timeout: DefaultTimeout},
		userAgent:  "costgw-upstream/1",
		retry:      DefaultRetryPolicy,
		newKey:     uuid.NewString,
		retryQuota: newRetryQuota(DefaultRetryQuota),
		inflight:   make(chan struct{}, DefaultMaxInFlight),
		log:        discardLogger,
		seed:       maphash.MakeSeed(),
	}
	c.serverHost, c.serverPort = serverOf(u)
	c.serverAddr = net.JoinHostPort(c.serverHost, strconv.Itoa(c.serverPort))
	c.breakers = newBreakers(u.Host, DefaultBreakerSettings)
	for _, opt := range opts {
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	// A redirect is answered, not followed: net/http would send it on with
	// the caller's Authorization header to another port of the same host,
	// or from https to http. The contract has none, so a 3xx is a failed
	// call, and the key goes nowhere but the upstream it belongs to.
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.Recommendations = &RecommendationsService{c}
	c.Anomalies = &AnomaliesService{c}
	c.Explorer = &ExplorerService{c}
	c.Budgets = &BudgetsService{c}
	c.Notifications = &NotificationsService{c}
	return c, nil
}

// serverOf is the host and port the client calls at u: its port, or its
// scheme's.
func serverOf(u *url.URL) (host string, port int) {
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		port = 80
		if u.Scheme == "https" {
			port = 443
		}
	}
	return u.Hostname(), port
}

// Server is the upstream's host and port, as an operator's log and the
// spans of calls (server.address, server.port) name it.
func (c *Client) Server() (host string, port int) { return c.serverHost, c.serverPort }

type apiKeyContextKey struct{}

// WithAPIKey returns a context that carries the caller's bearer key for the
// calls made with it.
func WithAPIKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, apiKeyContextKey{}, key)
}

// APIKeyFrom returns the bearer key carried by ctx, if any.
func APIKeyFrom(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(apiKeyContextKey{}).(string)
	return k, ok && k != ""
}

// call describes one operation call.
type call struct {
	op     string // operation id of the contract
	method string
	route  string // path template below the base, such as /v1/budgets/{id}
	path   string // escaped path below the base, starting with /v1/
	query  url.Values
	body   any
	// idempotencyKey is sent as Idempotency-Key; writes that carry one may be retried.
	idempotencyKey string
	// safe marks calls that change nothing upstream, so they may be retried.
	safe bool
	// idempotent marks a call whose repeat has the effect of the first,
	// though it may answer differently (a DELETE): it may be retried.
	idempotent bool
	// id is the budget id of a call below /v1/budgets/{id}, unescaped.
	id string
	// encoded is body as JSON, when the cache already encoded it.
	encoded []byte
	// cache is the call's cache outcome (CacheMiss, CacheRefresh), for
	// its attempts; "" when the cache does not keep it.
	cache string
	// keyHash is the cache's name of the caller's key, when hashed is set.
	keyHash [32]byte
	hashed  bool
}

// callStats is what the attempts of one call add up to.
type callStats struct {
	// mayHaveApplied is set when an attempt reached the upstream and its
	// answer does not say whether it did what it asked: it was sent and
	// got no answer, or got a 5xx (a proxy's 502 or 504 after the
	// upstream committed, or the upstream failing after it did).
	mayHaveApplied bool
}

// do sends the call, retrying where the policy and the call allow, and
// decodes the data member of the answer into a new T; or answers a read
// from the cache, when the client has one that keeps the call's operation.
func do[T any](ctx context.Context, c *Client, cl call) (*T, *Pagination, error) {
	var env *envelope[T]
	var err error
	if c.cache != nil && cl.safe && c.cache.ttlOf(cl.op) > 0 {
		env, err = cachedCall[T](ctx, c, cl)
	} else {
		env, _, err = fetch[T](ctx, c, cl, nil)
	}
	if err != nil {
		return nil, nil, err
	}
	return env.Data, env.Pagination, nil
}

// fetch sends the call, and keeps the bytes of its answer in keep when that
// is not nil.
func fetch[T any](ctx context.Context, c *Client, cl call, keep *capture) (*envelope[T], callStats, error) {
	var env *envelope[T]
	st, err := c.run(ctx, cl, keep, func() answerEnvelope {
		// A fresh envelope per attempt: a failed one may have filled part of it.
		env = new(envelope[T])
		return env
	})
	if err != nil {
		return nil, st, err
	}
	return env, st, nil
}

// run sends the call, retrying where the policy and the call allow, and
// tells the cache, if any, whether the upstream accepted the key.
func (c *Client) run(ctx context.Context, cl call, keep *capture, newEnv func() answerEnvelope) (callStats, error) {
	if c.cache == nil {
		return c.attempts(ctx, cl, keep, newEnv)
	}
	sent := c.cache.now()
	st, err := c.attempts(ctx, cl, keep, newEnv)
	c.cache.answered(ctx, &cl, sent, err)
	return st, err
}

// attempts sends the call, retrying where the policy and the call allow.
// Only this loop decides retries: the transport is kept from replaying
// requests on its own (see send), so the attempts the upstream sees are the
// ones counted here, the observer is told of, and the policy allows.
func (c *Client) attempts(ctx context.Context, cl call, keep *capture, newEnv func() answerEnvelope) (callStats, error) {
	var st callStats
	key, ok := APIKeyFrom(ctx)
	if !ok {
		return st, fmt.Errorf("upstream: %s: %w", cl.op, ErrNoAPIKey)
	}
	// Everything refused from here to the first attempt is the caller's
	// error: nothing is sent, retried, or counted against the upstream.
	if why := checkAPIKey(key); why != "" {
		return st, &Error{Op: cl.op, Code: codeMalformedKey, Message: why}
	}
	if cl.idempotencyKey != "" {
		if why := checkIdempotencyKey(cl.idempotencyKey); why != "" {
			return st, refuse(cl.op, why)
		}
	}
	body := cl.encoded
	if cl.body != nil && body == nil {
		var err error
		if body, err = json.Marshal(cl.body); err != nil {
			return st, &Error{Op: cl.op, Code: codeRefused, Message: "encode body", Err: err}
		}
	}
	// cl.path is already escaped (ids go through url.PathEscape); appending it
	// to URL.Path would escape it a second time.
	rawURL := c.base.String() + cl.path
	if len(cl.query) > 0 {
		rawURL += "?" + cl.query.Encode()
	}
	a := attempt{cl: &cl, rawURL: rawURL, key: key, body: body, caller: maphash.String(c.seed, key),
		scrub: newScrubber(key, c.base.Host), keep: keep}
	retryable := cl.safe || cl.idempotent || cl.idempotencyKey != ""
	if err := ctx.Err(); err != nil {
		return st, &Error{Op: cl.op, Code: codeNoResponse, Message: "the caller gave up before sending",
			IdempotencyKey: cl.idempotencyKey, Err: err}
	}
	for n := 1; ; n++ {
		a.n = n
		o, err := c.attempt(ctx, &a, newEnv())
		if err == nil {
			return st, nil
		}
		var ue *Error
		if errors.As(err, &ue) {
			// Every failure of a write names its key, so the caller can
			// send the same write again safely.
			ue.IdempotencyKey = cl.idempotencyKey
		}
		if o.class == "" {
			return st, err // refused before sending: nothing to log or retry
		}
		if o.sent && (o.class == ClassNoResponse || o.class == ClassTimeout || o.class == ClassServerError) {
			st.mayHaveApplied = true
		}
		var wait time.Duration = -1
		if retryable && ue != nil && ue.Temporary() && n < c.retry.MaxAttempts &&
			o.class != ClassCanceled && o.class != ClassLocal {
			// wait < 0: the upstream asked for a longer pause than we
			// allow. No token: it has failed so much of late that retrying
			// would only add load.
			if wait = c.retry.backoff(n, ue.RetryAfter); wait >= 0 && !c.retryQuota.withdraw() {
				wait = -1
			}
		}
		if o.class != ClassCanceled && o.class != ClassLocal {
			c.logAttempt(ctx, Attempt{Op: cl.op, Method: cl.method, Route: cl.route, Number: n}, &o, err, wait >= 0)
		}
		if wait < 0 {
			return st, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		if ctx.Err() != nil {
			if errors.Is(err, ctx.Err()) {
				return st, err
			}
			// The caller gave up; say so, or errors.Is(err, context.Canceled) fails.
			return st, fmt.Errorf("%w; gave up waiting to retry: %w", err, ctx.Err())
		}
	}
}

// attempt is what every attempt of one call shares.
type attempt struct {
	cl     *call
	n      int // attempt number, from 1
	rawURL string
	key    string
	body   []byte
	caller uint64 // the keyed hash of key that names the caller to its breaker
	scrub  scrubber
	keep   *capture // keeps the answer's bytes, for the cache; nil: not kept
}

// attempt makes one attempt through the in-flight bound and the circuit
// breakers, and decodes a success answer into env. An outcome with no class
// means nothing was sent: the client refused the attempt itself.
func (c *Client) attempt(ctx context.Context, a *attempt, env answerEnvelope) (outcome, error) {
	cl := a.cl
	if c.inflight != nil {
		select {
		case c.inflight <- struct{}{}:
			defer func() { <-c.inflight }()
		case <-ctx.Done():
			return outcome{}, &Error{Op: cl.op, Code: codeNoResponse, Message: "gave up waiting for a free connection",
				Err: ctx.Err()}
		}
	}
	var report func(verdict error)
	if c.breakers != nil {
		var err error
		if report, err = c.breakers.allow(cl.op, a.caller); err != nil {
			return outcome{}, err
		}
	}
	reqCtx := ctx
	var done func(AttemptResult)
	info := Attempt{Op: cl.op, Method: cl.method, Route: cl.route, Number: a.n, ServerAddress: c.serverHost, ServerPort: c.serverPort,
		Cache: cl.cache}
	if c.observer != nil {
		if reqCtx, done = c.observer(keylessContext{ctx}, info); reqCtx == nil {
			reqCtx = ctx
		}
	}
	start := time.Now()
	o, err := c.send(reqCtx, cl, a, env)
	o.class = classify(ctx, err, &o)
	if a.n == 1 && o.class != ClassLocal {
		c.retryQuota.deposit() // a first attempt that the upstream could see
	}
	if report != nil {
		report(verdict(o.class))
	}
	if done != nil {
		done(AttemptResult{Attempt: info, Status: o.status, RequestID: o.reqID, Class: o.class, Sent: o.sent,
			Duration: time.Since(start)})
	}
	return o, err
}

// verdict is what an attempt of class k tells a circuit breaker: any answer
// below 500, even a 4xx, a 429 or one that could not be read, shows a
// working upstream; no answer or a 5xx is a failure; a caller that went
// away, or a refusal before sending, says nothing about the upstream.
func verdict(k Class) error {
	switch k {
	case ClassServerError, ClassConnect, ClassNoResponse, ClassTimeout:
		return errFailed
	case ClassCanceled, ClassLocal:
		return errExcluded
	}
	return nil
}

// envelope is a success answer. It is decoded in one pass, straight into
// the type of its data member: no intermediate copy of the data, no second
// parse.
type envelope[T any] struct {
	Data       *T          `json:"data"`
	Pagination *Pagination `json:"pagination"`
}

func (e *envelope[T]) hasData() bool { return e.Data != nil }

// answerEnvelope is an envelope of any data type.
type answerEnvelope interface{ hasData() bool }

// withoutBody gives req, a request without a body, the body that keeps
// net/http's Transport from replaying it. The Transport replays a request
// on a reused connection that broke only when the request "has no body or
// has its Request.GetBody defined" (its documented rule): an empty body with
// no GetBody keeps it from replaying GETs and DELETEs, as a nil GetBody does
// for requests with a body, so the retry loop is the only place that repeats
// a request.
//
// To the Transport that body is one of unknown length, which for a GET or a
// DELETE it probes with a goroutine and a timer, to send the request as one
// without a body when the body is empty. The transfer encoding "identity"
// says the body is sent as it is: nothing is probed, and on HTTP/1.1 the
// request goes out with neither Content-Length nor Transfer-Encoding, as one
// without a body does. Only for the methods the Transport probes: a POST,
// PUT or PATCH without a body goes out chunked with no chunk, as before,
// where identity would leave it with no framing at all. On HTTP/2 the
// stream ends with an empty DATA frame instead of on the HEADERS frame.
func withoutBody(req *http.Request) {
	req.Body = emptyBody{}
	req.GetBody = nil
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodDelete, http.MethodOptions:
		req.TransferEncoding = identity
	}
}

var identity = []string{"identity"}

// emptyBody is the body withoutBody gives. The Transport's copy of a body of
// no stated length reaches the connection's io.Copy, which takes a 32 KiB
// buffer unless the body is an io.WriterTo.
type emptyBody struct{}

func (emptyBody) Read([]byte) (int, error)         { return 0, io.EOF }
func (emptyBody) WriteTo(io.Writer) (int64, error) { return 0, nil }
func (emptyBody) Close() error                     { return nil }

// wireTrace learns from the transport whether it looked for a connection
// (so a failure is not a local refusal) and whether it wrote the request (so
// the upstream may have seen it). The transport calls it from its own
// goroutines.
type wireTrace struct {
	getConn atomic.Bool
	wrote   atomic.Bool
}

// send makes one attempt and decodes a success answer into env.
func (c *Client) send(ctx context.Context, cl *call, a *attempt, env answerEnvelope) (outcome, error) {
	rawURL, key, body, sc := a.rawURL, a.key, a.body, a.scrub
	var o outcome
	tr := new(wireTrace)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn: func(string) { tr.getConn.Store(true) },
		WroteRequest: func(w httptrace.WroteRequestInfo) {
			if w.Err == nil {
				tr.wrote.Store(true)
			}
		},
	})
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, rawURL, rd)
	if err != nil {
		return o, &Error{Op: cl.op, Code: codeRefused, Message: "build request", Err: scrubErr(sc, err)}
	}
	if body == nil {
		withoutBody(req)
	}
	req.GetBody = nil // see withoutBody
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cl.idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", cl.idempotencyKey)
	}
	c.addHeaders(ctx, req)
	resp, err := c.http.Do(req)
	if err != nil {
		o.sent = tr.wrote.Load()
		if !tr.getConn.Load() && ctx.Err() == nil {
			// The transport (or a RoundTripper around it) refused the
			// request before looking for a connection: nothing was sent.
			return o, &Error{Op: cl.op, Code: codeRefused, Message: "the transport refused the request",
				Err: scrubErr(sc, transportCause(err))}
		}
		return o, &Error{Op: cl.op, Code: codeNoResponse, Message: "no response", Err: scrubErr(sc, transportCause(err))}
	}
	defer resp.Body.Close()
	o.sent, o.status = true, resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e, raw := errorFromResponse(cl.op, resp)
		e.scrub(sc)
		o.reqID, o.excerpt = e.RequestID, excerptOf(sc, raw)
		return o, e
	}
	reqID := sc.requestID(resp.Header.Get("X-Request-Id"))
	o.reqID = reqID
	var src io.Reader = resp.Body
	if a.keep != nil {
		a.keep.reset()
		src = io.TeeReader(resp.Body, a.keep)
	}
	br := &prefixReader{r: io.LimitReader(src, maxSuccessBody)}
	err = decodeAnswer(br, env)
	if br.err != nil {
		// The answer broke off (dropped connection, timeout, cancellation):
		// no complete answer arrived, which is temporary, not malformed.
		return o, &Error{Op: cl.op, Code: codeNoResponse, Message: "answer cut short",
			RequestID: reqID, Err: scrubErr(sc, br.err)}
	}
	if err == nil && !env.hasData() {
		err = errors.New("answer has no data member")
	}
	if err != nil {
		o.excerpt = excerptOf(sc, br.head[:br.n])
		return o, &Error{Op: cl.op, Status: resp.StatusCode, Code: codeBadResponse, Message: "malformed answer",
			RequestID: reqID, Err: scrubErr(sc, err)}
	}
	// Drain what the decoder left so the connection goes back to the pool.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return o, nil
}

// transportCause strips the request URL from a transport error: an error may
// travel far, and the upstream address is nobody else's business.
func transportCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// scrubbedError is an error whose text is scrubbed of the key and the
// upstream's address (transport errors name the address they dialled,
// decoding errors quote the answer); errors.Is and errors.As still see the
// original.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrubErr returns err with its text scrubbed, or err when the text is clean.
func scrubErr(sc scrubber, err error) error {
	msg := err.Error()
	clean := sc.text(msg, maxMessageLen, "[withheld]")
	if clean == msg {
		return err
	}
	return &scrubbedError{msg: clean, err: err}
}

// RetryPolicy says how often and how patiently a call is repeated after a
// temporary failure (429, 5xx, no answer). Only calls that change nothing
// upstream, and writes that carry an Idempotency-Key, are ever repeated.
type RetryPolicy struct {
	MaxAttempts   int           // total attempts, 1 means no retry
	BaseDelay     time.Duration // first backoff; doubles per attempt, with full jitter
	MaxDelay      time.Duration // cap of one backoff
	MaxRetryAfter time.Duration // longest Retry-After honoured; a longer one ends the retries
}

// DefaultRetryPolicy makes up to 6 attempts, backing off from 50 ms up to
// 1 s with full jitter, and honours Retry-After up to 5 s. Six attempts keep
// a query of a few dozen calls above 99.9 % success when 15 % of calls fail;
// the retry quota and the circuit breaker keep a failing upstream from
// paying for that.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 6, BaseDelay: 50 * time.Millisecond, MaxDelay: time.Second, MaxRetryAfter: 5 * time.Second}

// backoff returns the pause before the next attempt, or -1 to stop.
func (p RetryPolicy) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		if retryAfter > p.MaxRetryAfter {
			return -1
		}
		return retryAfter
	}
	d := p.BaseDelay << (attempt - 1)
	if d > p.MaxDelay || d <= 0 {
		d = p.MaxDelay
	}
	if d <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(d)) + 1)
}
