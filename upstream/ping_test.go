package upstream_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/costgw/gateway/upstream"
)

// Ping asks the upstream at the client's base URL, through its transport,
// with no key; any answer below 500 means it is there.
func TestPing(t *testing.T) {
	t.Parallel()
	closed := newFake(t, answer(http.StatusOK, `{}`))
	closed.srv.Close()
	tests := []struct {
		name   string
		status int // 0: use the closed server
		want   error
	}{
		{"401 without a key", http.StatusUnauthorized, nil},
		{"404", http.StatusNotFound, nil},
		{"429", http.StatusTooManyRequests, nil},
		{"200", http.StatusOK, nil},
		{"500", http.StatusInternalServerError, upstream.ErrUnavailable},
		{"503", http.StatusServiceUnavailable, upstream.ErrUnavailable},
		{"connection refused", 0, upstream.ErrUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, answer(tc.status, envelope("missing_credentials", "no key", "r")))
			base := f.URL
			if tc.status == 0 {
				base = closed.URL
			}
			var rec recorder
			c := newTestClient(t, base, upstream.WithObserver(rec.observe))
			err := c.Ping(t.Context())
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Ping = %v, want %v", err, tc.want)
			}
			if tc.status == 0 {
				return
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream saw %d requests, want 1 (no retry)", len(reqs))
			}
			if r := reqs[0]; r.Method != "GET" || r.EscapedPath != basePath+"/v1/budgets" || r.Header.Get("Authorization") != "" {
				t.Errorf("Ping sent %s %s with Authorization %q; want a keyless GET %s/v1/budgets", r.Method, r.EscapedPath,
					r.Header.Get("Authorization"), basePath)
			}
			if started, done := rec.count(); started != 1 || done != 1 || rec.results[0].Op != "ping" {
				t.Errorf("observer saw %d/%d attempts %+v, want one of op ping", started, done, rec.results)
			}
		})
	}
}
