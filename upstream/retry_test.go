package upstream_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// failure is a temporary failure the fake upstream can produce.
type failure struct {
	name string
	do   func(t *testing.T, w http.ResponseWriter)
	want error
}

func temporaryFailures() []failure {
	status := func(code int, env string) func(*testing.T, http.ResponseWriter) {
		return func(_ *testing.T, w http.ResponseWriter) { writeJSON(w, code, envelope(env, env, "r")) }
	}
	return []failure{
		{"503", status(http.StatusServiceUnavailable, "service_unavailable"), upstream.ErrUnavailable},
		{"429", status(http.StatusTooManyRequests, "rate_limited"), upstream.ErrRateLimited},
		{"500", status(http.StatusInternalServerError, "internal_error"), upstream.ErrUnavailable},
		{"502 HTML", func(_ *testing.T, w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html>bad gateway</html>"))
		}, upstream.ErrUnavailable},
		{"dropped connection", hangUp, upstream.ErrUnavailable},
	}
}

// safeCalls are calls that change nothing upstream, so they may be retried.
func safeCalls() []methodCase {
	var out []methodCase
	for _, mc := range methodCases() {
		if mc.method == "GET" || mc.op == "budgetLookbackPost" || strings.HasPrefix(mc.op, "explorer") {
			out = append(out, mc)
		}
	}
	return out
}

func TestSafeCallsRetryTemporaryFailures(t *testing.T) {
	t.Parallel()
	for _, mc := range coveringOps(t, safeCalls(), 14, "safe calls (every operation but create, update, delete)") {
		for _, fl := range temporaryFailures() {
			t.Run(mc.name+"/"+fl.name+"/recovers", func(t *testing.T) {
				t.Parallel()
				f := newFake(t, func(w http.ResponseWriter, _ *http.Request, n int) {
					if n < fastRetry.MaxAttempts {
						fl.do(t, w)
						return
					}
					writeJSON(w, http.StatusOK, mc.answer)
				})
				c := newTestClient(t, f.URL)
				got, err := mc.call(keyCtx(t), c)
				if err != nil {
					t.Fatalf("err = %v, want success on attempt %d", err, fastRetry.MaxAttempts)
				}
				if diff := cmp.Diff(mc.want(t), got); diff != "" {
					t.Errorf("answer mismatch (-want +got):\n%s", diff)
				}
				reqs := f.requests()
				if len(reqs) != fastRetry.MaxAttempts {
					t.Fatalf("upstream saw %d requests, want %d", len(reqs), fastRetry.MaxAttempts)
				}
				for i, r := range reqs[1:] {
					if diff := cmp.Diff(reqs[0], r); diff != "" {
						t.Errorf("attempt %d differs from the first (-first +this):\n%s", i+2, diff)
					}
				}
			})
		}
	}
	for _, fl := range temporaryFailures() {
		t.Run("gives up after MaxAttempts/"+fl.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) { fl.do(t, w) })
			c := newTestClient(t, f.URL)
			_, err := c.Budgets.Get(keyCtx(t), "bud_1")
			if !errors.Is(err, fl.want) {
				t.Errorf("err = %v (%v), want %v", err, matching(err), fl.want)
			}
			if n := f.count(); n != fastRetry.MaxAttempts {
				t.Errorf("upstream saw %d requests, want %d", n, fastRetry.MaxAttempts)
			}
		})
	}
}

func TestNoRetryOfPermanentFailures(t *testing.T) {
	t.Parallel()
	statuses := []int{400, 401, 403, 404, 405, 409, 413, 415, 422}
	policy := upstream.RetryPolicy{MaxAttempts: 5, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}
	for _, mc := range methodCases() {
		for _, status := range statuses {
			t.Run(mc.name+"/"+http.StatusText(status), func(t *testing.T) {
				t.Parallel()
				f := newFake(t, answer(status, envelope("some_code", "msg", "r")))
				c := newTestClient(t, f.URL, upstream.WithRetry(policy))
				_, err := mc.call(keyCtx(t), c)
				var ue *upstream.Error
				if !errors.As(err, &ue) || ue.Status != status {
					t.Fatalf("err = %v, want a %d *Error", err, status)
				}
				if n := f.count(); n != 1 {
					t.Errorf("upstream saw %d requests, want 1", n)
				}
			})
		}
	}
}

// A delete is idempotent, so it is retried like a read; it never carries an
// Idempotency-Key.
func TestDeleteRetriesLikeARead(t *testing.T) {
	t.Parallel()
	for _, fl := range temporaryFailures() {
		t.Run(fl.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, n int) {
				if n < fastRetry.MaxAttempts {
					fl.do(t, w)
					return
				}
				writeJSON(w, http.StatusOK, `{"data":{"success":true}}`)
			})
			c := newTestClient(t, f.URL)
			got, err := c.Budgets.Delete(keyCtx(t), "bud_1")
			if err != nil {
				t.Fatalf("err = %v, want success on attempt %d", err, fastRetry.MaxAttempts)
			}
			if diff := cmp.Diff(&upstream.DeleteResult{Success: true}, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			for i, r := range f.requests() {
				if k := r.Header.Get("Idempotency-Key"); k != "" {
					t.Errorf("attempt %d carried Idempotency-Key %q", i+1, k)
				}
			}
			if n := f.count(); n != fastRetry.MaxAttempts {
				t.Errorf("upstream saw %d DELETE requests, want %d", n, fastRetry.MaxAttempts)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	// Backoff of zero, so any pause comes from Retry-After.
	policy := upstream.RetryPolicy{MaxAttempts: 3, MaxRetryAfter: 2 * time.Second}

	t.Run("honoured", func(t *testing.T) {
		t.Parallel()
		for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests} {
			t.Run(http.StatusText(status), func(t *testing.T) {
				t.Parallel()
				f := newFake(t, func(w http.ResponseWriter, _ *http.Request, n int) {
					if n == 1 {
						// The smallest non-zero value the header's whole seconds allow.
						w.Header().Set("Retry-After", "1")
						writeJSON(w, status, envelope("busy", "busy", "r"))
						return
					}
					writeJSON(w, http.StatusOK, `{"data":{"periods":[]}}`)
				})
				c := newTestClient(t, f.URL, upstream.WithRetry(policy))
				start := time.Now()
				if _, err := c.Budgets.LookbackPreview(keyCtx(t)); err != nil {
					t.Fatal(err)
				}
				if waited := time.Since(start); waited < time.Second {
					t.Errorf("retried after %v, before the 1s Retry-After", waited)
				}
				if n := f.count(); n != 2 {
					t.Errorf("upstream saw %d requests, want 2", n)
				}
			})
		}
	})

	t.Run("too long stops retrying", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name  string
			value func() string // the header, made when the answer is written
			want  time.Duration
		}{
			{"seconds", func() string { return "120" }, 120 * time.Second},
			{"HTTP date", func() string { return time.Now().Add(time.Hour).UTC().Format(http.TimeFormat) }, time.Hour},
			// Seconds whose nanoseconds overflow int64: to a negative and to a
			// small positive duration (0.29 s) if multiplied naively.
			{"overflows to negative", func() string { return "10000000000" }, 0},
			{"overflows to small", func() string { return "18446744074" }, 0},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
					w.Header().Set("Retry-After", tc.value())
					writeJSON(w, http.StatusServiceUnavailable, envelope("service_unavailable", "down", "r"))
				})
				c := newTestClient(t, f.URL, upstream.WithRetry(policy))
				_, err := c.Recommendations.List(keyCtx(t), nil)
				var ue *upstream.Error
				if !errors.As(err, &ue) || ue.Status != http.StatusServiceUnavailable {
					t.Fatalf("err = %v, want the 503", err)
				}
				if ue.RetryAfter <= policy.MaxRetryAfter {
					t.Errorf("RetryAfter = %v, want above %v", ue.RetryAfter, policy.MaxRetryAfter)
				}
				// The date form loses sub-second precision and the time the answer
				// took to arrive, so only a generous band is checked.
				if tc.want != 0 && (ue.RetryAfter < tc.want*5/6 || ue.RetryAfter > tc.want) {
					t.Errorf("RetryAfter = %v, want about %v", ue.RetryAfter, tc.want)
				}
				if n := f.count(); n != 1 {
					t.Errorf("upstream saw %d requests, want 1: a Retry-After above MaxRetryAfter ends the retries", n)
				}
			})
		}
	})
}

// writeCall is a create or update made with the given options.
type writeCall struct {
	name string
	op   string
	call func(ctx context.Context, c *upstream.Client, opts *upstream.WriteOptions) error
}

func writeCalls() []writeCall {
	return []writeCall{
		{"Create", "createBudget", func(ctx context.Context, c *upstream.Client, opts *upstream.WriteOptions) error {
			return errOf(c.Budgets.Create(ctx, &upstream.BudgetCreate{Name: "B", NumberOfPeriods: 1, StartDate: ymd(2026, 1, 1), ExplorerReportID: "rpt_1"}, opts))
		}},
		{"Update", "updateBudget", func(ctx context.Context, c *upstream.Client, opts *upstream.WriteOptions) error {
			return errOf(c.Budgets.Update(ctx, "bud_1", &upstream.BudgetUpdate{Name: pointerTo("B")}, opts))
		}},
	}
}

func TestWritesRetryWithTheSameIdempotencyKey(t *testing.T) {
	t.Parallel()
	keyOpts := []struct {
		name    string
		opts    *upstream.WriteOptions
		wantKey string
	}{
		{"generated, nil options", nil, "idem-1"},
		{"generated, empty key", &upstream.WriteOptions{}, "idem-1"},
		{"caller's key", &upstream.WriteOptions{IdempotencyKey: "order-42/retry #1"}, "order-42/retry #1"},
		{"caller's key of 64 characters", &upstream.WriteOptions{IdempotencyKey: strings.Repeat("k", 64)}, strings.Repeat("k", 64)},
	}
	for _, wc := range writeCalls() {
		for _, ko := range keyOpts {
			for _, fl := range temporaryFailures() {
				t.Run(wc.name+"/"+ko.name+"/"+fl.name, func(t *testing.T) {
					t.Parallel()
					f := newFake(t, func(w http.ResponseWriter, _ *http.Request, n int) {
						if n < fastRetry.MaxAttempts {
							fl.do(t, w)
							return
						}
						writeJSON(w, http.StatusOK, `{"data":{"budget":`+budgetJSON+`}}`)
					})
					c := newTestClient(t, f.URL)
					if err := wc.call(keyCtx(t), c, ko.opts); err != nil {
						t.Fatalf("err = %v, want success", err)
					}
					reqs := f.requests()
					if len(reqs) != fastRetry.MaxAttempts {
						t.Fatalf("upstream saw %d requests, want %d", len(reqs), fastRetry.MaxAttempts)
					}
					for i, r := range reqs {
						if got := r.Header.Get("Idempotency-Key"); got != ko.wantKey {
							t.Errorf("attempt %d: Idempotency-Key = %q, want %q", i+1, got, ko.wantKey)
						}
						if string(r.Body) != string(reqs[0].Body) {
							t.Errorf("attempt %d body %s differs from the first %s", i+1, r.Body, reqs[0].Body)
						}
					}
				})
			}
		}
	}
}

func TestGeneratedKeysAreFreshPerCall(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(http.StatusOK, `{"data":{"budget":`+budgetJSON+`}}`))
	c := newTestClient(t, f.URL)
	for _, wc := range writeCalls() {
		if err := wc.call(keyCtx(t), c, nil); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range f.requests() {
		got = append(got, r.Header.Get("Idempotency-Key"))
	}
	if diff := cmp.Diff([]string{"idem-1", "idem-2"}, got); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}

func TestDefaultKeysAreRandom(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(http.StatusOK, `{"data":{"budget":`+budgetJSON+`}}`))
	c, err := upstream.NewClient(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.Budgets.Create(keyCtx(t), &upstream.BudgetCreate{Name: "B"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	reqs := f.requests()
	k1, k2 := reqs[0].Header.Get("Idempotency-Key"), reqs[1].Header.Get("Idempotency-Key")
	if k1 == "" || k1 == k2 || len(k1) > upstream.MaxIdempotencyKeyLen {
		t.Errorf("default keys %q and %q: want two different non-empty keys of at most %d characters", k1, k2, upstream.MaxIdempotencyKeyLen)
	}
}

func TestIdempotencyKeyRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		key  string
	}{
		{"65 characters", strings.Repeat("k", 65)},
		{"blank", "   "},
	}
	for _, wc := range writeCalls() {
		for _, tc := range tests {
			t.Run(wc.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, answer(http.StatusOK, `{"data":{"budget":`+budgetJSON+`}}`))
				c := newTestClient(t, f.URL)
				err := wc.call(keyCtx(t), c, &upstream.WriteOptions{IdempotencyKey: tc.key})
				if diff := cmp.Diff([]string{"ErrInvalidRequest"}, matching(err)); diff != "" {
					t.Errorf("err = %v; sentinels (-want +got):\n%s", err, diff)
				}
				var ue *upstream.Error
				if !errors.As(err, &ue) || ue.Op != wc.op || ue.Status != 0 {
					t.Errorf("err = %#v, want an *Error of %s with no status", err, wc.op)
				}
				if n := f.count(); n != 0 {
					t.Errorf("upstream saw %d requests, want none", n)
				}
			})
		}
	}
}

func TestFailedWriteCarriesIdempotencyKey(t *testing.T) {
	t.Parallel()
	failures := append(temporaryFailures(),
		failure{"409", func(_ *testing.T, w http.ResponseWriter) {
			writeJSON(w, http.StatusConflict, envelope("idempotency_conflict", "reused", "r"))
		}, upstream.ErrConflict},
		failure{"400", func(_ *testing.T, w http.ResponseWriter) {
			writeJSON(w, http.StatusBadRequest, envelope("validation_error", "name", "r"))
		}, upstream.ErrInvalidRequest},
		failure{"malformed 200", func(_ *testing.T, w http.ResponseWriter) {
			writeJSON(w, http.StatusOK, `{"data":{"budget":`)
		}, upstream.ErrBadResponse},
	)
	for _, wc := range writeCalls() {
		for _, given := range []string{"", "caller-key"} {
			for _, fl := range failures {
				t.Run(wc.name+"/"+fl.name+"/key "+given, func(t *testing.T) {
					t.Parallel()
					f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) { fl.do(t, w) })
					c := newTestClient(t, f.URL)
					err := wc.call(keyCtx(t), c, &upstream.WriteOptions{IdempotencyKey: given})
					if !errors.Is(err, fl.want) {
						t.Fatalf("err = %v (%v), want %v", err, matching(err), fl.want)
					}
					want := given
					if want == "" {
						want = "idem-1"
					}
					var ue *upstream.Error
					if !errors.As(err, &ue) || ue.IdempotencyKey != want {
						t.Errorf("err = %#v, want an *Error with IdempotencyKey %q", err, want)
					}
				})
			}
		}
	}
}
