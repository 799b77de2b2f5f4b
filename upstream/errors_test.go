package upstream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sentinels lists every sentinel so a test can check that exactly the right
// ones match.
var sentinels = map[string]error{
	"ErrNoAPIKey":       upstream.ErrNoAPIKey,
	"ErrInvalidRequest": upstream.ErrInvalidRequest,
	"ErrUnauthorized":   upstream.ErrUnauthorized,
	"ErrForbidden":      upstream.ErrForbidden,
	"ErrNotFound":       upstream.ErrNotFound,
	"ErrConflict":       upstream.ErrConflict,
	"ErrRateLimited":    upstream.ErrRateLimited,
	"ErrUnavailable":    upstream.ErrUnavailable,
	"ErrBadResponse":    upstream.ErrBadResponse,
}

// matching returns the names of the sentinels err matches.
func matching(err error) []string {
	var names []string
	for name, s := range sentinels {
		if errors.Is(err, s) {
			names = append(names, name)
		}
	}
	return names
}

func sortedStrings() cmp.Option { return cmpopts.SortSlices(func(a, b string) bool { return a < b }) }

func TestErrorEnvelope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		code   string
		want   error
	}{
		{"400 validation", http.StatusBadRequest, "validation_error", upstream.ErrInvalidRequest},
		{"401 credentials", http.StatusUnauthorized, "invalid_credentials", upstream.ErrUnauthorized},
		{"403 scope", http.StatusForbidden, "forbidden_scope", upstream.ErrForbidden},
		{"404 not found", http.StatusNotFound, "not_found", upstream.ErrNotFound},
		{"409 conflict", http.StatusConflict, "idempotency_conflict", upstream.ErrConflict},
		{"413 too large", http.StatusRequestEntityTooLarge, "payload_too_large", upstream.ErrInvalidRequest},
		{"415 media type", http.StatusUnsupportedMediaType, "unsupported_media_type", upstream.ErrInvalidRequest},
		{"429 rate limited", http.StatusTooManyRequests, "rate_limited", upstream.ErrRateLimited},
		{"500 internal", http.StatusInternalServerError, "internal_error", upstream.ErrUnavailable},
		{"502 bad gateway", http.StatusBadGateway, "bad_gateway", upstream.ErrUnavailable},
		{"503 unavailable", http.StatusServiceUnavailable, "service_unavailable", upstream.ErrUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const reqID = "550e8400-e29b-41d4-a716-446655440000"
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				w.Header().Set("X-Request-Id", "header-id-differs")
				writeJSON(w, tc.status, envelope(tc.code, "message for "+tc.code, reqID))
			})
			c := newTestClient(t, f.URL, upstream.WithRetry(noRetry))

			got, err := c.Budgets.Get(keyCtx(t), "bud_1")
			if got != nil {
				t.Errorf("result = %+v, want nil", got)
			}
			var ue *upstream.Error
			if !errors.As(err, &ue) {
				t.Fatalf("err = %T %v, want *upstream.Error", err, err)
			}
			want := &upstream.Error{Op: "getBudget", Status: tc.status, Code: tc.code, Message: "message for " + tc.code, RequestID: reqID}
			if diff := cmp.Diff(want, ue); diff != "" {
				t.Errorf("*Error mismatch (-want +got):\n%s", diff)
			}
			wantNames := []string{}
			for name, s := range sentinels {
				if s == tc.want {
					wantNames = append(wantNames, name)
				}
			}
			if diff := cmp.Diff(wantNames, matching(err), sortedStrings()); diff != "" {
				t.Errorf("sentinels matched (-want +got):\n%s", diff)
			}
			for _, part := range []string{tc.code, reqID} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not mention %q", err, part)
				}
			}
		})
	}
}

// Statuses without a sentinel of their own still match one: callers branch
// on sentinels only.
func TestEveryStatusMatchesASentinel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		want   error
	}{
		{"405 method not allowed", http.StatusMethodNotAllowed, upstream.ErrInvalidRequest},
		{"410 gone", http.StatusGone, upstream.ErrInvalidRequest},
		{"422 unprocessable", http.StatusUnprocessableEntity, upstream.ErrInvalidRequest},
		{"418 teapot", http.StatusTeapot, upstream.ErrInvalidRequest},
		{"504 gateway timeout", http.StatusGatewayTimeout, upstream.ErrUnavailable},
		{"300 not followed", http.StatusMultipleChoices, upstream.ErrBadResponse},
		{"204 no content", http.StatusNoContent, upstream.ErrBadResponse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(tc.status) })
			c := newTestClient(t, f.URL, upstream.WithRetry(noRetry))
			_, err := c.Budgets.Get(keyCtx(t), "bud_1")
			var ue *upstream.Error
			if !errors.As(err, &ue) {
				t.Fatalf("err = %T %v, want *upstream.Error", err, err)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v matches %v, want %v", err, matching(err), tc.want)
			}
		})
	}
}

func TestErrorWithoutEnvelope(t *testing.T) {
	t.Parallel()
	const html = "<html><body><h1>502 Bad Gateway</h1><p>nginx SECRET-PAGE</p></body></html>"
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        error
	}{
		{"HTML page 502", http.StatusBadGateway, "text/html", html, upstream.ErrUnavailable},
		{"empty 502", http.StatusBadGateway, "", "", upstream.ErrUnavailable},
		{"JSON without error 400", http.StatusBadRequest, "application/json", `{"message":"SECRET-PAGE bad"}`, upstream.ErrInvalidRequest},
		{"error is a string 500", http.StatusInternalServerError, "application/json", `{"error":"SECRET-PAGE"}`, upstream.ErrUnavailable},
		{"error without code 404", http.StatusNotFound, "application/json", `{"error":{"message":"SECRET-PAGE"}}`, upstream.ErrNotFound},
		{"truncated JSON 401", http.StatusUnauthorized, "application/json", `{"error":{"code":"invalid_cred`, upstream.ErrUnauthorized},
		{"plain text 429", http.StatusTooManyRequests, "text/plain", "slow down SECRET-PAGE", upstream.ErrRateLimited},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				}
				w.Header().Set("X-Request-Id", "req-from-header")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			c := newTestClient(t, f.URL, upstream.WithRetry(noRetry))
			_, err := c.Recommendations.List(keyCtx(t), nil)
			var ue *upstream.Error
			if !errors.As(err, &ue) {
				t.Fatalf("err = %T %v, want *upstream.Error", err, err)
			}
			if ue.Status != tc.status || ue.Op != "listRecommendations" || ue.RequestID != "req-from-header" {
				t.Errorf("Status, Op, RequestID = %d, %q, %q; want %d, listRecommendations, req-from-header",
					ue.Status, ue.Op, ue.RequestID, tc.status)
			}
			if ue.Code == "" || ue.Message == "" {
				t.Errorf("Code %q, Message %q: both must be filled from the status", ue.Code, ue.Message)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v matches %v, want %v", err, matching(err), tc.want)
			}
			if s := err.Error(); strings.Contains(s, "SECRET-PAGE") || strings.Contains(s, "<html") {
				t.Errorf("error string carries the raw body: %q", s)
			}
		})
	}
}

// The upstream's request id is how its operators find a failed call, so it
// is kept whatever its characters: those outside letters, digits and ._:-
// are percent-escaped (no line break or quote reaches a log line or an
// extension as such), and a long id is cut at 128 bytes, marked with …. An
// id that holds what may never travel (the key, the upstream's address, a
// URL, a header) is dropped. Before, an id with one character outside the
// safe set, such as a slash, was dropped entirely.
func TestRequestIDIsKeptEscaped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   string
		want string
	}{
		{"UUID", "550e8400-e29b-41d4-a716-446655440000", "550e8400-e29b-41d4-a716-446655440000"},
		{"slash, spaces, hash, plus", "req/2026 07 20#abc+==", "req%2F2026%2007%2020%23abc%2B%3D%3D"},
		{"percent", "a%2Fb", "a%252Fb"},
		{"line break", "id\r\nX-Forged: 1", "id%0D%0AX-Forged:%201"},
		{"quote and angle brackets", `a"<b>`, "a%22%3Cb%3E"},
		{"not ASCII", "réq", "r%C3%A9q"},
		{"long", strings.Repeat("a", 200), strings.Repeat("a", 125) + "…"},
		{"long, cut two bytes into an escape", strings.Repeat("a", 123) + "/////", strings.Repeat("a", 123) + "…"},
		{"long, cut one byte into an escape", strings.Repeat("a", 124) + "/////", strings.Repeat("a", 124) + "…"},
		{"the key", "req " + testKey, ""},
		{"a URL", "see https://logs.example/req/1", ""},
		{"an address", "req@10.1.2.3:8080", ""},
		{"a header", "Authorization: Bearer abc", ""},
		{"blank", "  ", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, from := range []string{"envelope", "header"} {
				f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
					if from == "header" {
						w.Header()["X-Request-Id"] = []string{strings.NewReplacer("\r", "", "\n", "").Replace(tc.id)}
						writeJSON(w, http.StatusBadGateway, "<html>Bad Gateway</html>")
						return
					}
					writeJSON(w, http.StatusNotFound, envelope("not_found", "Budget not found", tc.id))
				})
				c := newTestClient(t, f.URL, upstream.WithRetry(noRetry))
				_, err := c.Budgets.Get(keyCtx(t), "bud_1")
				var ue *upstream.Error
				if !errors.As(err, &ue) {
					t.Fatalf("err = %v, want an *upstream.Error", err)
				}
				want := tc.want
				if from == "header" && tc.name == "line break" {
					want = "idX-Forged:%201" // a header cannot hold a line break
				}
				if ue.RequestID != want {
					t.Errorf("from the %s: RequestID = %q, want %q", from, ue.RequestID, want)
				}
				if len(ue.RequestID) > 128 {
					t.Errorf("from the %s: RequestID is %d bytes, cap 128", from, len(ue.RequestID))
				}
			}
		})
	}
}

// countingTransport counts the bytes the client reads of answer bodies.
type countingTransport struct {
	base http.RoundTripper
	read atomic.Int64
}

func (ct *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := ct.base.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &ct.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func TestHugeErrorBodyIsReadOnlyUpToTheCap(t *testing.T) {
	t.Parallel()
	const huge = 10 << 20
	var written atomic.Int64
	handlerDone := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		defer close(handlerDone)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		chunk := []byte(`{"error":{"code":"x","message":"` + strings.Repeat("A", 32<<10))
		for written.Load() < huge {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	ct := &countingTransport{base: upstream.NewTransport()}
	c := newTestClient(t, f.URL,
		upstream.WithHTTPClient(&http.Client{Transport: ct, Timeout: 10 * time.Second}),
		upstream.WithRetry(noRetry))

	_, err := c.Budgets.Get(keyCtx(t), "bud_1")
	var ue *upstream.Error
	if !errors.As(err, &ue) || ue.Status != http.StatusInternalServerError || !errors.Is(err, upstream.ErrUnavailable) {
		t.Fatalf("err = %v, want a typed 500 *Error", err)
	}
	if got := ct.read.Load(); got >= 1<<20 {
		t.Errorf("client read %d bytes of a %d-byte error body; it must stop at its cap", got, huge)
	}
	if len(ue.Message) > 1<<10 {
		t.Errorf("Message is %d bytes; the body must not be kept", len(ue.Message))
	}
	<-handlerDone // the client hung up, so the handler's writes fail
	if got := written.Load(); got >= huge {
		t.Logf("handler wrote all %d bytes (socket buffers absorbed them); the read bound above is the check", got)
	}
}

func TestBadSuccessAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		list   bool
		header string // Content-Type
	}{
		{name: "malformed JSON", body: `{"data":{"success":tru`},
		{name: "not JSON at all", body: `<html>ok</html>`, header: "text/html"},
		{name: "no data member", body: `{"success":true}`},
		{name: "null data", body: `{"data":null}`},
		{name: "empty body", body: ``},
		{name: "data of the wrong type", body: `{"data":{"success":"yes"}}`},
		{name: "list without pagination", body: `{"data":[]}`, list: true},
		{name: "list with null pagination", body: `{"data":[],"pagination":null}`, list: true},
		{name: "list data is an object", body: `{"data":{},"pagination":{"limit":50,"has_more":false,"next_cursor":null}}`, list: true},
		{name: "list item is null", body: `{"data":[null],"pagination":{"limit":50,"has_more":false,"next_cursor":null}}`, list: true},
		{name: "list item has a bad date", body: `{"data":[{"anomaly_id":"a","start_date":"2026-02-30"}],"pagination":{"limit":50,"has_more":false,"next_cursor":null}}`, list: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				w.Header().Set("Content-Type", "application/json")
				if tc.header != "" {
					w.Header().Set("Content-Type", tc.header)
				}
				_, _ = io.WriteString(w, tc.body)
			})
			c := newTestClient(t, f.URL)
			var err error
			if tc.list {
				var p *upstream.Page[upstream.Anomaly]
				p, err = c.Anomalies.List(keyCtx(t), nil)
				if p != nil {
					t.Errorf("page = %+v, want nil", p)
				}
			} else {
				var d *upstream.DeleteResult
				d, err = c.Budgets.Delete(keyCtx(t), "bud_1")
				if d != nil {
					t.Errorf("result = %+v, want nil", d)
				}
			}
			if diff := cmp.Diff([]string{"ErrBadResponse"}, matching(err)); diff != "" {
				t.Errorf("err = %v; sentinels (-want +got):\n%s", err, diff)
			}
			var ue *upstream.Error
			if !errors.As(err, &ue) {
				t.Fatalf("err = %T, want *upstream.Error", err)
			}
			// A malformed answer is not temporary: sending again would not help.
			if n := f.count(); n != 1 {
				t.Errorf("upstream saw %d requests, want 1 (no retry of a malformed answer)", n)
			}
		})
	}
}

// blockUntilGone blocks a handler until the client goes away or the test ends.
func blockUntilGone(t *testing.T) func(http.ResponseWriter, *http.Request, int) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return func(_ http.ResponseWriter, r *http.Request, _ int) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	stallBody := func(t *testing.T) func(http.ResponseWriter, *http.Request, int) {
		block := blockUntilGone(t)
		return func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{"succ`)
			http.NewResponseController(w).Flush()
			block(w, r, n)
		}
	}
	tests := []struct {
		name    string
		handler func(t *testing.T) func(http.ResponseWriter, *http.Request, int)
	}{
		{"no headers", blockUntilGone},
		{"body stalls", stallBody},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tc.handler(t))
			c := newTestClient(t, f.URL, upstream.WithTimeout(50*time.Millisecond))
			_, err := c.Budgets.Actuals(keyCtx(t), "bud_1")
			var ue *upstream.Error
			if !errors.As(err, &ue) || !errors.Is(err, upstream.ErrUnavailable) {
				t.Fatalf("err = %v (%v), want ErrUnavailable", err, matching(err))
			}
			if ue.Status != 0 {
				t.Errorf("Status = %d, want 0 (no complete answer)", ue.Status)
			}
			// A timed-out read is temporary: the GET was sent MaxAttempts times.
			if n := f.count(); n != fastRetry.MaxAttempts {
				t.Errorf("upstream saw %d requests, want %d", n, fastRetry.MaxAttempts)
			}
		})
	}
}

// cancelAfterAnswer buffers each answer and then cancels the call's
// context, so the client holds a complete answer when it sees the cancellation.
type cancelAfterAnswer struct {
	base   http.RoundTripper
	cancel func()
}

func (ct cancelAfterAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := ct.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	ct.cancel()
	return resp, nil
}

func TestContextCanceled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// handler answers; it may call cancel where the test wants it.
		handler func(cancel func()) func(http.ResponseWriter, *http.Request, int)
		// cancelAfterAnswer: cancel once the answer is in the client's hands.
		cancelAfterAnswer bool
	}{
		{name: "before the answer", handler: func(cancel func()) func(http.ResponseWriter, *http.Request, int) {
			return func(_ http.ResponseWriter, r *http.Request, _ int) {
				cancel()
				<-r.Context().Done()
			}
		}},
		{name: "while reading the body", handler: func(cancel func()) func(http.ResponseWriter, *http.Request, int) {
			return func(w http.ResponseWriter, r *http.Request, _ int) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"data":{"succ`)
				http.NewResponseController(w).Flush()
				cancel()
				<-r.Context().Done()
			}
		}},
		{name: "while waiting to retry", cancelAfterAnswer: true, handler: func(func()) func(http.ResponseWriter, *http.Request, int) {
			return func(w http.ResponseWriter, _ *http.Request, _ int) {
				w.Header().Set("Retry-After", "1")
				writeJSON(w, http.StatusServiceUnavailable, envelope("service_unavailable", "down", "r1"))
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(keyCtx(t))
			defer cancel()
			f := newFake(t, tc.handler(cancel))
			var opts []upstream.Option
			if tc.cancelAfterAnswer {
				opts = append(opts, upstream.WithHTTPClient(&http.Client{
					Transport: cancelAfterAnswer{base: upstream.NewTransport(), cancel: cancel},
					Timeout:   10 * time.Second,
				}))
			}
			c := newTestClient(t, f.URL, opts...)
			_, err := c.Budgets.Planning(ctx, "bud_1")
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want errors.Is(err, context.Canceled)", err)
			}
			var ue *upstream.Error
			if !errors.As(err, &ue) {
				t.Errorf("err = %T, want an *upstream.Error inside", err)
			}
			if n := f.count(); n != 1 {
				t.Errorf("upstream saw %d requests after cancellation, want 1", n)
			}
		})
	}
}

func TestAlreadyCanceledContextSendsNothing(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(http.StatusOK, `{"data":{"success":true}}`))
	c := newTestClient(t, f.URL)
	ctx, cancel := context.WithCancel(keyCtx(t))
	cancel()
	_, err := c.Budgets.Delete(ctx, "bud_1")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := f.count(); n != 0 {
		t.Errorf("upstream saw %d requests, want none", n)
	}
}

// Every failure kind is checked for the key, and transport failures for the
// request URL.
func TestErrorsNeverCarryKeyOrURL(t *testing.T) {
	t.Parallel()
	closed := newFake(t, answer(http.StatusOK, `{}`))
	closed.srv.Close() // connection refused from now on

	type failure struct {
		name    string
		handler func(t *testing.T) func(http.ResponseWriter, *http.Request, int)
		base    func(f *fakeUpstream) string
		call    func(ctx context.Context, c *upstream.Client) error
		want    error
	}
	get := func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.Get(ctx, "bud_1")) }
	handler := func(h func(http.ResponseWriter, *http.Request, int)) func(*testing.T) func(http.ResponseWriter, *http.Request, int) {
		return func(*testing.T) func(http.ResponseWriter, *http.Request, int) { return h }
	}
	ok := handler(answer(http.StatusOK, `{"data":{"success":true}}`))
	tests := []failure{
		{name: "envelope 401", handler: handler(answer(401, envelope("invalid_credentials", "Invalid API key", "r1"))), call: get, want: upstream.ErrUnauthorized},
		{name: "envelope echoing the key", handler: handler(answer(401, envelope("invalid_credentials", "Invalid API key "+testKey, testKey))), call: get, want: upstream.ErrUnauthorized},
		{name: "HTML 502", handler: handler(answer(502, "<html>Bad Gateway</html>")), call: get, want: upstream.ErrUnavailable},
		{name: "malformed 200", handler: handler(answer(200, `{"data":`)), call: get, want: upstream.ErrBadResponse},
		{name: "dropped connection", handler: func(t *testing.T) func(http.ResponseWriter, *http.Request, int) {
			return func(w http.ResponseWriter, _ *http.Request, _ int) { hangUp(t, w) }
		}, call: get, want: upstream.ErrUnavailable},
		{name: "timeout", handler: blockUntilGone, call: func(ctx context.Context, c *upstream.Client) error {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
			defer cancel()
			return get(ctx, c)
		}, want: upstream.ErrUnavailable},
		{name: "connection refused", handler: ok, base: func(*fakeUpstream) string { return closed.URL }, call: get, want: upstream.ErrUnavailable},
		{name: "invalid limit", handler: ok, call: func(ctx context.Context, c *upstream.Client) error {
			return errOf(c.Budgets.List(ctx, &upstream.ListOptions{Limit: 500}))
		}, want: upstream.ErrInvalidRequest},
		{name: "empty id", handler: ok, call: func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.Get(ctx, "")) }, want: upstream.ErrInvalidRequest},
		{name: "long idempotency key", handler: ok, call: func(ctx context.Context, c *upstream.Client) error {
			return errOf(c.Budgets.Create(ctx, &upstream.BudgetCreate{Name: "x"}, &upstream.WriteOptions{IdempotencyKey: strings.Repeat("k", 65)}))
		}, want: upstream.ErrInvalidRequest},
		{name: "write conflict", handler: handler(answer(409, envelope("idempotency_conflict", "reused", "r2"))), call: func(ctx context.Context, c *upstream.Client) error {
			return errOf(c.Budgets.Update(ctx, "bud_1", &upstream.BudgetUpdate{Name: pointerTo("n")}, nil))
		}, want: upstream.ErrConflict},
		{name: "canceled", handler: blockUntilGone, call: func(ctx context.Context, c *upstream.Client) error {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(10*time.Millisecond, cancel)
			return get(ctx, c)
		}, want: upstream.ErrUnavailable},
		{name: "answer cut short", handler: func(*testing.T) func(http.ResponseWriter, *http.Request, int) {
			return func(w http.ResponseWriter, _ *http.Request, _ int) {
				w.Header().Set("Content-Length", "100")
				_, _ = io.WriteString(w, `{"data":{`)
			}
		}, call: get, want: upstream.ErrUnavailable},
		{name: "list without pagination", handler: handler(answer(200, `{"data":[]}`)), call: func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.List(ctx, nil)) }, want: upstream.ErrBadResponse},
		{name: "malformed bearer key", handler: ok, call: func(ctx context.Context, c *upstream.Client) error {
			return get(upstream.WithAPIKey(ctx, testKey+"\nX-Injected: 1"), c)
		}, want: upstream.ErrUnauthorized},
		{name: "required member missing", handler: handler(answer(200, `{"data":{"plannings":[{"id":"`+testKey+`"}]}}`)),
			call: func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.Planning(ctx, "bud_1")) }, want: upstream.ErrBadResponse},
		{name: "member of the wrong kind", handler: handler(answer(200, `{"data":{"plannings":"`+testKey+` http://127.0.0.1:1/v1"}}`)),
			call: func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.Planning(ctx, "bud_1")) }, want: upstream.ErrBadResponse},
		{name: "key is the id", handler: handler(answer(404, envelope("not_found", "no budget "+testKey, "r3"))), call: func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.Get(ctx, "x")) }, want: upstream.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tc.handler(t))
			base := f.URL
			if tc.base != nil {
				base = tc.base(f)
			}
			c := newTestClient(t, base, upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}))
			err := tc.call(keyCtx(t), c)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v (%v), want %v", err, matching(err), tc.want)
			}
			s := err.Error()
			if strings.Contains(s, testKey) {
				t.Errorf("error string carries the key: %q", s)
			}
			for _, u := range []string{base, f.srv.URL, strings.TrimPrefix(base, "http://") + "/v1",
				strings.TrimPrefix(f.srv.URL, "http://"), strings.TrimPrefix(closed.srv.URL, "http://")} {
				if strings.Contains(s, u) {
					t.Errorf("error string carries the URL or host %q: %q", u, s)
				}
			}
			var ue *upstream.Error
			if errors.As(err, &ue) {
				for _, part := range []string{ue.Message, ue.Code, ue.RequestID} {
					if strings.Contains(part, testKey) || strings.Contains(part, "127.0.0.1") {
						t.Errorf("*Error field %q carries the key or the host", part)
					}
				}
			}
		})
	}
}

// An upstream that echoes its own URL, its host, the request's headers and
// the key in a 4xx answer: what reaches the caller (the envelope's message,
// code and request id, which the gateway shows) carries none of them.
func TestUpstreamMessagesNeverLeak(t *testing.T) {
	t.Parallel()
	echo := func(r *http.Request, host string) []string {
		var hdr []string
		for k, v := range r.Header {
			hdr = append(hdr, k+": "+strings.Join(v, ","))
		}
		full := "http://" + host + r.URL.RequestURI()
		return []string{
			"no budget at " + full,
			"request was:\r\n" + strings.Join(hdr, "\r\n"),
			"Authorization: " + r.Header.Get("Authorization"),
			"key " + strings.ToUpper(testKey) + " is not valid here",
			"bearer=" + testKey,
			"upstream " + host + " (" + strings.Split(host, ":")[0] + ") refused; see https://docs.internal.example/errors#x",
			"host header was Host: " + host + "; user-agent=" + r.Header.Get("User-Agent"),
			strings.Repeat("long message ", 200),
		}
	}
	for i := range len(echo(&http.Request{Header: http.Header{}, URL: &url.URL{}}, "")) {
		for _, status := range []int{400, 401, 403, 404, 409, 422} {
			t.Run(fmt.Sprintf("%d/%d", status, i), func(t *testing.T) {
				t.Parallel()
				f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int) {
					msg := echo(r, r.Host)[i]
					writeJSON(w, status, envelope("code "+r.Host, msg, "req "+testKey+" "+r.Host))
				})
				host := strings.TrimPrefix(f.srv.URL, "http://")
				c := newTestClient(t, f.URL, upstream.WithRetry(noRetry))
				_, err := c.Budgets.Get(keyCtx(t), "bud_1")
				var ue *upstream.Error
				if !errors.As(err, &ue) || ue.Status != status {
					t.Fatalf("err = %v, want the %d", err, status)
				}
				hostname := strings.Split(host, ":")[0]
				for name, v := range map[string]string{"Message": ue.Message, "Code": ue.Code, "RequestID": ue.RequestID, "Error()": err.Error()} {
					lv := strings.ToLower(v)
					for _, bad := range []string{strings.ToLower(testKey), host, hostname, "://", "internal.example",
						"authorization", "user-agent", "costgw-upstream", "\r", "\n"} {
						if strings.Contains(lv, bad) {
							t.Errorf("%s carries %q: %q", name, bad, v)
						}
					}
				}
				if len(ue.Message) > 300 || ue.Message == "" {
					t.Errorf("Message is %d bytes, want 1–300: %q", len(ue.Message), ue.Message)
				}
			})
		}
	}
}

// Callers branch on sentinels only, so every error the client makes must
// belong to exactly one class.
func TestEveryErrorMatchesExactlyOneSentinel(t *testing.T) {
	t.Parallel()
	for status := 100; status < 600; status++ {
		if status >= 200 && status < 300 {
			continue // successes become errors only as malformed answers, below
		}
		e := &upstream.Error{Op: "op", Status: status, Code: "x"}
		if got := matching(e); len(got) != 1 {
			t.Errorf("status %d matches %v, want exactly one sentinel", status, got)
		}
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"refused before sending", &upstream.Error{Op: "op", Code: "request_refused"}, "ErrInvalidRequest"},
		{"no response", &upstream.Error{Op: "op", Code: "no_response", Err: io.EOF}, "ErrUnavailable"},
		{"malformed answer", &upstream.Error{Op: "op", Status: 200, Code: "malformed_response"}, "ErrBadResponse"},
		{"wrapped", fmt.Errorf("resolver: %w", &upstream.Error{Op: "op", Status: 404, Code: "not_found"}), "ErrNotFound"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff([]string{tc.want}, matching(tc.err)); diff != "" {
				t.Errorf("sentinels (-want +got):\n%s", diff)
			}
		})
	}
}

// A request the client refuses itself is the caller's error: nothing is
// sent, it is not retried, no circuit breaker counts it and the retry quota
// is neither charged nor credited. Before, an Idempotency-Key with a control
// character made Go's transport refuse the request; the client took that for
// "no response", retried it and opened the breaker every caller shares.
func TestLocalErrorsAreNotUpstreamFailures(t *testing.T) {
	t.Parallel()
	create := func(key string) func(ctx context.Context, c *upstream.Client) error {
		return func(ctx context.Context, c *upstream.Client) error {
			return errOf(c.Budgets.Create(ctx, &upstream.BudgetCreate{Name: "B"}, &upstream.WriteOptions{IdempotencyKey: key}))
		}
	}
	update := func(key string) func(ctx context.Context, c *upstream.Client) error {
		return func(ctx context.Context, c *upstream.Client) error {
			return errOf(c.Budgets.Update(ctx, "bud_1", &upstream.BudgetUpdate{}, &upstream.WriteOptions{IdempotencyKey: key}))
		}
	}
	read := func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.Planning(ctx, "bud_1")) }
	withKey := func(key string) func(ctx context.Context, c *upstream.Client) error {
		return func(ctx context.Context, c *upstream.Client) error {
			return read(upstream.WithAPIKey(ctx, key), c)
		}
	}
	tests := []struct {
		name string
		call func(ctx context.Context, c *upstream.Client) error
		want string // the one sentinel the error matches
		code string
	}{
		{"Idempotency-Key with a line feed", create("k\n1"), "ErrInvalidRequest", "request_refused"},
		{"Idempotency-Key with a carriage return", update("k\r1"), "ErrInvalidRequest", "request_refused"},
		{"Idempotency-Key with NUL", create("k\x001"), "ErrInvalidRequest", "request_refused"},
		{"Idempotency-Key with DEL", create("k\x7f1"), "ErrInvalidRequest", "request_refused"},
		{"Idempotency-Key with a tab", create("k\t1"), "ErrInvalidRequest", "request_refused"},
		{"Idempotency-Key outside ASCII", create("ключ"), "ErrInvalidRequest", "request_refused"},
		{"Idempotency-Key of 64 runes but 128 bytes", create(strings.Repeat("é", 64)), "ErrInvalidRequest", "request_refused"},
		{"Idempotency-Key of 65 characters", update(strings.Repeat("k", 65)), "ErrInvalidRequest", "request_refused"},
		{"Idempotency-Key with a leading space", create(" k"), "ErrInvalidRequest", "request_refused"},
		{"Idempotency-Key with a trailing space", create("k "), "ErrInvalidRequest", "request_refused"},
		{"bearer key with a line feed", withKey("key\nX-Injected: 1"), "ErrUnauthorized", "malformed_api_key"},
		{"bearer key with a space", withKey("two words"), "ErrUnauthorized", "malformed_api_key"},
		{"bearer key with NUL", withKey("key\x00"), "ErrUnauthorized", "malformed_api_key"},
		{"bearer key outside ASCII", withKey("clé"), "ErrUnauthorized", "malformed_api_key"},
		{"bearer key too long", withKey(strings.Repeat("k", upstream.MaxAPIKeyLen+1)), "ErrUnauthorized", "malformed_api_key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var failFirst atomic.Bool
			failFirst.Store(true)
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				if failFirst.CompareAndSwap(true, false) {
					writeJSON(w, http.StatusServiceUnavailable, envelope("service_unavailable", "down", "r"))
					return
				}
				writeJSON(w, http.StatusOK, `{"data":{"plannings":[]}}`)
			})
			// A breaker that trips on 4 failed attempts, and a retry quota
			// of exactly one retry: either would show a local error counted
			// against the upstream.
			c := newTestClient(t, f.URL,
				upstream.WithCircuitBreaker(upstream.BreakerSettings{MinRequests: 4, FailureRatio: 0.5, Window: time.Minute, OpenFor: time.Minute, MinCallers: 1}),
				upstream.WithRetryQuota(upstream.RetryQuota{Burst: 1}))
			for i := range 40 {
				err := tc.call(keyCtx(t), c)
				if diff := cmp.Diff([]string{tc.want}, matching(err)); diff != "" {
					t.Fatalf("call %d: err = %v; sentinels (-want +got):\n%s", i, err, diff)
				}
				var ue *upstream.Error
				if !errors.As(err, &ue) || ue.Status != 0 || ue.Code != tc.code || ue.Temporary() {
					t.Fatalf("call %d: err = %#v, want a permanent *Error with code %s and no status", i, err, tc.code)
				}
				if strings.Contains(err.Error(), testKey) {
					t.Fatalf("error carries the key: %v", err)
				}
			}
			if n := f.count(); n != 0 {
				t.Fatalf("upstream saw %d requests, want none", n)
			}
			// The breaker is closed and the budget still holds its retry:
			// a read that fails once is retried and succeeds.
			if err := read(keyCtx(t), c); err != nil {
				t.Fatalf("a valid read after the refusals: %v", err)
			}
			if n := f.count(); n != 2 {
				t.Errorf("upstream saw %d requests for the valid read, want 2 (a failure and its retry)", n)
			}
		})
	}
}

// refusingTransport refuses every request before any connection, as a
// RoundTripper of the caller's (a policy, a rate limiter) may.
type refusingTransport struct{ calls atomic.Int64 }

func (rt *refusingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.calls.Add(1)
	_ = r.Body.Close()
	return nil, errors.New("refused by the caller's policy")
}

// A transport that refuses a request before looking for a connection sent
// nothing: the failure is local, not the upstream's.
func TestTransportRefusalIsLocal(t *testing.T) {
	t.Parallel()
	rt := &refusingTransport{}
	var results []upstream.AttemptResult
	c := newTestClient(t, "http://upstream.invalid",
		upstream.WithHTTPClient(&http.Client{Transport: rt, Timeout: time.Second}),
		upstream.WithCircuitBreaker(upstream.BreakerSettings{MinRequests: 2, FailureRatio: 0.5, Window: time.Minute, OpenFor: time.Minute, MinCallers: 1}),
		upstream.WithObserver(func(ctx context.Context, a upstream.Attempt) (context.Context, func(upstream.AttemptResult)) {
			return ctx, func(r upstream.AttemptResult) { results = append(results, r) }
		}))
	for range 10 {
		_, err := c.Budgets.Get(keyCtx(t), "bud_1")
		if diff := cmp.Diff([]string{"ErrInvalidRequest"}, matching(err)); diff != "" {
			t.Fatalf("err = %v; sentinels (-want +got):\n%s", err, diff)
		}
	}
	if n := rt.calls.Load(); n != 10 {
		t.Errorf("transport asked %d times, want 10: no retries, and no open breaker", n)
	}
	for _, r := range results {
		if r.Class != upstream.ClassLocal || r.Sent {
			t.Errorf("observed %+v, want class local_error, not sent", r)
		}
	}
}
