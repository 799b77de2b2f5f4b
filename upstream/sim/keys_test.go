package sim_test

import (
	"net/http"
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

// A key revoked at run time answers 401 invalid_credentials, as an unknown
// key does, until it is restored; another key is untouched. The control
// routes are not operations: they are not counted.
func TestRevokeAndRestoreKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	if r := e.do(t, req{method: http.MethodPost, path: "/_sim/keys/" + sim.DemoKey + "/revoke"}); r.status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	e.get(t, "/v1/budgets").wantError(t, http.StatusUnauthorized, "invalid_credentials")
	if r := e.get(t, "/v1/budgets", sim.OtherOrgKey); r.status != http.StatusOK {
		t.Errorf("another key while one is revoked: %d %s", r.status, r.body)
	}
	if r := e.do(t, req{method: http.MethodPost, path: "/_sim/keys/" + sim.DemoKey + "/restore"}); r.status != http.StatusNoContent {
		t.Fatalf("restore: %d %s", r.status, r.body)
	}
	if r := e.get(t, "/v1/budgets"); r.status != http.StatusOK {
		t.Errorf("after restore: %d %s", r.status, r.body)
	}
	if n := e.sim.TotalCalls(); n != 3 {
		t.Errorf("%d calls counted, want the 3 of the contract", n)
	}
}

// A key's rate limit answers 429 rate_limited with Retry-After past its
// burst, after the key check and for that key alone; 0 lifts it.
func TestKeyRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	set := func(n int) {
		t.Helper()
		r := e.do(t, req{method: http.MethodPut, path: "/_sim/keys/" + sim.DemoKey + "/rate-limit", body: map[string]any{"per_second": n}})
		if r.status != http.StatusNoContent {
			t.Fatalf("rate-limit %d: %d %s", n, r.status, r.body)
		}
	}
	set(2)
	for i := range 2 {
		if r := e.get(t, "/v1/budgets"); r.status != http.StatusOK {
			t.Fatalf("request %d within the burst: %d %s", i+1, r.status, r.body)
		}
	}
	r := e.get(t, "/v1/budgets")
	r.wantError(t, http.StatusTooManyRequests, "rate_limited")
	if got := r.header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1", got)
	}
	if r := e.get(t, "/v1/budgets", sim.OtherOrgKey); r.status != http.StatusOK {
		t.Errorf("another key: %d %s", r.status, r.body)
	}
	e.get(t, "/v1/budgets", "made-up").wantError(t, http.StatusUnauthorized, "invalid_credentials")
	set(0)
	if r := e.get(t, "/v1/budgets"); r.status != http.StatusOK {
		t.Errorf("with the limit lifted: %d %s", r.status, r.body)
	}
}

// The control routes refuse what they do not know, with the contract's
// error envelope.
func TestControlRoutesRefuse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	for _, tc := range []struct {
		r      req
		status int
		code   string
	}{
		{req{method: http.MethodPost, path: "/_sim/keys/made-up/revoke"}, http.StatusNotFound, "not_found"},
		{req{method: http.MethodPost, path: "/_sim/keys/" + sim.DemoKey + "/forget"}, http.StatusNotFound, "not_found"},
		{req{method: http.MethodGet, path: "/_sim/keys/" + sim.DemoKey + "/revoke"}, http.StatusNotFound, "not_found"},
		{req{method: http.MethodPut, path: "/_sim/keys/" + sim.DemoKey + "/rate-limit", body: map[string]any{"per_second": -1}}, http.StatusBadRequest, "validation_error"},
		{req{method: http.MethodPut, path: "/_sim/keys/" + sim.DemoKey + "/rate-limit", body: "{"}, http.StatusBadRequest, "validation_error"},
		{req{method: http.MethodPut, path: "/_sim/keys/" + sim.DemoKey + "/rate-limit", body: map[string]any{}}, http.StatusBadRequest, "validation_error"},
	} {
		e.do(t, tc.r).wantError(t, tc.status, tc.code)
	}
}
