package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/costgw/gateway/internal/testlog"
)

// /readyz flipped on one failed probe when 15 % of upstream answers were
// 5xx. A gateway that was ready turns unready only after unreadyAfter
// probes in a row fail, and ready again after one success; before its first
// success it is not ready.
func TestReadinessDoesNotFlap(t *testing.T) {
	t.Parallel()
	var fail bool
	rd := newReadiness(func(context.Context) error {
		if fail {
			return errors.New("down")
		}
		return nil
	}, readinessTimeout, slog.New(slog.DiscardHandler))
	check := func(failNow, want bool) {
		t.Helper()
		fail = failNow
		if ready, _ := rd.check(context.Background()); ready != want {
			t.Fatalf("after a probe that failed=%v: ready %v, want %v", failNow, ready, want)
		}
	}
	check(true, false) // never ready yet
	check(false, true)
	for range 20 { // every other probe fails: ready throughout
		check(true, true)
		check(false, true)
	}
	for range unreadyAfter - 1 {
		check(true, true)
	}
	check(true, false) // the third in a row
	check(true, false)
	check(false, true)
}

// A failed probe's line has a request_id only when the request has one: on
// the admin listener, which gives none, it said "request_id":"".
func TestReadinessLogsNoEmptyRequestID(t *testing.T) {
	t.Parallel()
	var logs testlog.Buffer
	rd := newReadiness(func(context.Context) error { return errors.New("down") }, readinessTimeout,
		slog.New(slog.NewJSONHandler(&logs, nil)))
	rd.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/readyz", nil))
	if line := logs.String(); !strings.Contains(line, "the upstream probe failed") || strings.Contains(line, "request_id") {
		t.Errorf("log: %s", line)
	}
}
