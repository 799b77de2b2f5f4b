package upstream_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// testKey is the bearer key of the httptest tests. It is distinctive so that
// a leak into an error string cannot go unnoticed.
const testKey = "sk-test-7f3c2a9e-DO-NOT-LEAK"

// basePath is the path prefix of every test base URL: the client must append
// operation paths to it, not replace it.
const basePath = "/api"

// fastRetry retries quickly so that retry tests take milliseconds.
var fastRetry = upstream.RetryPolicy{
	MaxAttempts:   3,
	BaseDelay:     time.Millisecond,
	MaxDelay:      2 * time.Millisecond,
	MaxRetryAfter: 2 * time.Second,
}

// noRetry makes exactly one attempt.
var noRetry = upstream.RetryPolicy{MaxAttempts: 1, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}

// seenRequest is what the fake upstream saw of one request.
type seenRequest struct {
	Method      string
	EscapedPath string // path as sent on the wire
	Path        string // path after unescaping
	RawQuery    string
	Query       url.Values
	Header      http.Header
	Body        []byte
}

// fakeUpstream is an httptest server that records every request and answers
// with a handler the test gives. attempt counts requests from 1.
type fakeUpstream struct {
	srv  *httptest.Server
	URL  string // base URL with basePath
	mu   sync.Mutex
	reqs []seenRequest
}

func newFake(t *testing.T, h func(w http.ResponseWriter, r *http.Request, attempt int)) *fakeUpstream {
	t.Helper()
	f := &fakeUpstream{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, seenRequest{
			Method:      r.Method,
			EscapedPath: r.URL.EscapedPath(),
			Path:        r.URL.Path,
			RawQuery:    r.URL.RawQuery,
			Query:       r.URL.Query(),
			Header:      r.Header.Clone(),
			Body:        body,
		})
		n := len(f.reqs)
		f.mu.Unlock()
		h(w, r, n)
	}))
	t.Cleanup(f.srv.Close)
	f.URL = f.srv.URL + basePath
	return f
}

// requests returns a copy of the requests seen so far.
func (f *fakeUpstream) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.reqs...)
}

// count returns how many requests arrived.
func (f *fakeUpstream) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// saw returns the requests seen so far, and fails the test (but goes on)
// unless there are n of them.
func (f *fakeUpstream) saw(t *testing.T, n int) []seenRequest {
	t.Helper()
	reqs := f.requests()
	if len(reqs) != n {
		t.Errorf("upstream saw %d requests, want %d", len(reqs), n)
	}
	return reqs
}

// wantCount checks that the fake upstream saw n requests.
func (f *fakeUpstream) wantCount(t *testing.T, n int) {
	t.Helper()
	if got := f.count(); got != n {
		t.Errorf("upstream saw %d requests, want %d", got, n)
	}
}

// answer returns a handler that always writes status and body as JSON.
func answer(status int, body string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, status, body) }
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// envelope returns an error envelope body.
func envelope(code, message, requestID string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{
		"code": code, "message": message, "request_id": requestID,
	}})
	return string(b)
}

// hangUp drops the connection without answering.
func hangUp(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	_ = conn.Close()
}

// newTestClient returns a client of baseURL with fastRetry and deterministic
// Idempotency-Keys idem-1, idem-2, …; opts come after and may override them.
func newTestClient(t *testing.T, baseURL string, opts ...upstream.Option) *upstream.Client {
	t.Helper()
	var mu sync.Mutex
	n := 0
	keys := func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return "idem-" + strconv.Itoa(n)
	}
	all := append([]upstream.Option{upstream.WithRetry(fastRetry), upstream.WithIdempotencyKeys(keys)}, opts...)
	c, err := upstream.NewClient(baseURL, all...)
	if err != nil {
		t.Fatalf("NewClient(%q): %v", baseURL, err)
	}
	return c
}

// keyCtx returns the test's context carrying testKey.
func keyCtx(t *testing.T) context.Context {
	return upstream.WithAPIKey(t.Context(), testKey)
}

// jsonDiff compares two JSON texts by value ("" means no body at all).
func jsonDiff(t *testing.T, want string, got []byte) string {
	t.Helper()
	if want == "" {
		if len(got) != 0 {
			return "want no body, got " + string(got)
		}
		return ""
	}
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad wanted JSON %s: %v", want, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return "body is not JSON: " + string(got)
	}
	return cmp.Diff(w, g)
}

func pointerTo[T any](v T) *T { return &v }

func ymd(y int, m time.Month, d int) upstream.Date { return upstream.Date{Year: y, Month: m, Day: d} }

func ts(t *testing.T, s string) upstream.Timestamp {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("bad timestamp %q: %v", s, err)
	}
	return upstream.Timestamp{Time: v}
}

// errOf drops a call's value and keeps its error, for the cases whose calls
// differ in what they answer but are checked only for how they fail.
func errOf[T any](_ T, err error) error { return err }
