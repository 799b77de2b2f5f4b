package upstream_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/costgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the JSON log lines written so far.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		delete(m, "time")
		out = append(out, m)
	}
	return out
}

// Every failed or malformed answer is logged once, with what it takes to
// find it upstream, and nothing that must not travel; without a log scope,
// each attempt (within the client's bound).
func TestFailedAttemptsAreLoggedOnce(t *testing.T) {
	t.Parallel()
	hostile := `<html>` + testKey + ` at http://internal.example/v1/budgets?x=1 Authorization: Bearer ` + testKey +
		` ` + strings.Repeat("A", 2000) + `</html>`
	var host string
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch n {
		case 1:
			w.Header().Set("X-Request-Id", "req-502")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(hostile + " " + host))
		case 2:
			hangUp(t, w)
		case 3:
			writeJSON(w, http.StatusOK, `{"data":{"plannings":[]}}`)
		case 4:
			writeJSON(w, http.StatusNotFound, envelope("not_found", "Budget not found", "req-404"))
		default:
			w.Header().Set("X-Request-Id", "req-bad")
			writeJSON(w, http.StatusOK, `{"data":{"plannings":"`+testKey+` `+host+`"}}`)
		}
	})
	host = strings.TrimPrefix(f.srv.URL, "http://")
	var buf syncBuffer
	c := newTestClient(t, f.URL, upstream.WithLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	if _, err := c.Budgets.Planning(keyCtx(t), "bud_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Budgets.Planning(keyCtx(t), "bud_2"); err == nil {
		t.Fatal("want the 404")
	}
	if _, err := c.Budgets.Planning(keyCtx(t), "bud_3"); err == nil {
		t.Fatal("want the malformed answer")
	}
	lines := buf.lines(t)
	type line struct {
		Level, Op, Route, Class, Code, RequestID string
		Status, Attempt                          int
		Retrying, HasBody                        bool
	}
	var got []line
	for _, l := range lines {
		s := func(k string) string { v, _ := l[k].(string); return v }
		n := func(k string) int { v, _ := l[k].(float64); return int(v) }
		b, _ := l["retrying"].(bool)
		got = append(got, line{s("level"), s("op"), s("route"), s("class"), s("code"), s("request_id"), n("status"), n("attempt"), b, s("body") != ""})
		// The upstream's host and port are for the operator, in server
		// alone; nothing else of its address, the key or a header is.
		if s("server") != host {
			t.Errorf("the line's server is %q, want %q", s("server"), host)
		}
		delete(l, "server")
		all, _ := json.Marshal(l)
		for _, bad := range []string{testKey, host, "http://", "internal.example", "Authorization", "/v1/budgets/bud_"} {
			if strings.Contains(string(all), bad) {
				t.Errorf("log line carries %q: %s", bad, all)
			}
		}
		if body := s("body"); len(body) > 256 {
			t.Errorf("body excerpt is %d bytes, want at most 256", len(body))
		}
		if s("cause") == "" {
			t.Errorf("log line without a cause: %s", all)
		}
	}
	route := "/v1/budgets/{id}/planning"
	want := []line{
		{"WARN", "getBudgetPlanning", route, "server_error", "http_502", "req-502", 502, 1, true, true},
		{"WARN", "getBudgetPlanning", route, "no_response", "no_response", "", 0, 2, true, false},
		{"INFO", "getBudgetPlanning", route, "client_error", "not_found", "req-404", 404, 1, false, true},
		{"WARN", "getBudgetPlanning", route, "bad_response", "malformed_response", "req-bad", 200, 1, false, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
}

// A request's calls log one line however many of their attempts fail, and
// count them all (10 Overview requests at 30 % injected 503s wrote 235
// lines, one an attempt); the client writes at most LogBurst lines a
// LogEvery in all.
func TestFailuresLoggedOncePerScope(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, http.StatusServiceUnavailable, envelope("service_unavailable", "down", "req-503"))
	})
	var buf syncBuffer
	c := newTestClient(t, f.URL, upstream.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))),
		upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 3}), upstream.WithCircuitBreaker(upstream.BreakerSettings{}))
	ctx := upstream.WithLogScope(keyCtx(t))
	for _, id := range []string{"bud_1", "bud_2", "bud_3"} {
		if _, err := c.Budgets.Planning(ctx, id); err == nil {
			t.Fatal("want the 503")
		}
	}
	if got := len(buf.lines(t)); got != 1 {
		t.Errorf("one request's 3 failing calls wrote %d lines, want 1", got)
	}
	if got := upstream.FailedAttempts(ctx); got != 9 {
		t.Errorf("FailedAttempts = %d, want 9 (3 calls of 3 attempts)", got)
	}
	failing := 0
	for range 3 * upstream.LogBurst {
		ctx := upstream.WithLogScope(keyCtx(t))
		_, _ = c.Budgets.Planning(ctx, "bud_1")
		if upstream.FailedAttempts(ctx) > 0 {
			failing++
		}
	}
	if failing <= upstream.LogBurst {
		t.Fatalf("only %d requests failed upstream (a breaker opened?): the bound is not tested", failing)
	}
	if got := len(buf.lines(t)); got > upstream.LogBurst {
		t.Errorf("%d requests' failures wrote %d lines at once, want at most %d", 3*upstream.LogBurst, got, upstream.LogBurst)
	}
}
