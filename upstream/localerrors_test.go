package upstream_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

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
