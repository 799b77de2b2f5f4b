package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/costgw/gateway/internal/testhttp"
	"github.com/costgw/gateway/internal/testlog"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &testlog.Buffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-seed", "3"}, logs) }()

	urlRe := regexp.MustCompile(`url=(http://\S+)`)
	// The start-up log ends with the control routes.
	var base string
	for timeout := time.After(20 * time.Second); base == ""; {
		log, changed := logs.Changed()
		if m := urlRe.FindStringSubmatch(log); m != nil && strings.Contains(log, "control routes") {
			base = m[1]
			break
		}
		select {
		case <-changed:
		case err := <-done:
			t.Fatalf("run returned early: %v\n%s", err, logs)
		case <-timeout:
			t.Fatalf("no url logged:\n%s", logs)
		}
	}
	for _, k := range []string{sim.DemoKey, sim.ReadOnlyKey, sim.OtherOrgKey, sim.UnentitledKey} {
		if !strings.Contains(logs.String(), "key="+k) {
			t.Errorf("start-up log does not describe %s", k)
		}
	}

	status, _, body := testhttp.Get(t, base+"/v1/budgets?limit=2", "Authorization", "Bearer "+sim.DemoKey)
	if status != http.StatusOK || !strings.Contains(body, `"pagination"`) {
		t.Fatalf("status %d: %s", status, body)
	}
	// The access log line names the operation and status, never the key.
	var line string
	logs.Wait(t, 5*time.Second, "access log line", func(log string) bool {
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "msg=request") {
				line = l
			}
		}
		return line != ""
	})
	for _, want := range []string{"method=GET", "path=/v1/budgets", "operation=listBudgets", "status=200", "duration_ms="} {
		if !strings.Contains(line, want) {
			t.Errorf("access log %q lacks %s", line, want)
		}
	}
	if strings.Contains(line, sim.DemoKey) || strings.Contains(line, "Bearer") || strings.Contains(line, "limit=2") {
		t.Errorf("access log leaks the request: %q", line)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not stop after cancel")
	}
	if !strings.Contains(logs.String(), "shutting down") {
		t.Errorf("no shutdown log:\n%s", logs)
	}
}

func TestRunListenError(t *testing.T) {
	if err := run(context.Background(), []string{"-listen", "256.0.0.1:bad"}, io.Discard); err == nil {
		t.Error("no error for a bad listen address")
	}
}

func TestParseConfig(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	t.Run("defaults", func(t *testing.T) {
		cfg, err := parseConfig(nil, env(nil), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		want := sim.Options{Seed: 1, AsOf: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), Faults: sim.Faults{RetryAfter: time.Second}}
		if cfg.listen != "127.0.0.1:8090" {
			t.Errorf("listen %q", cfg.listen)
		}
		if diff := cmp.Diff(want, cfg.opts, cmp.Comparer(func(a, b func() time.Time) bool { return a == nil && b == nil })); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("environment, overridden by flags", func(t *testing.T) {
		cfg, err := parseConfig(
			[]string{"-seed", "9", "-fault-500", "0.5"},
			env(map[string]string{
				"COSTSIM_LISTEN": "0.0.0.0:9999", "COSTSIM_SEED": "4", "COSTSIM_AS_OF": "2026-06-30",
				"COSTSIM_LATENCY": "20ms", "COSTSIM_JITTER": "5ms", "COSTSIM_SPIKE_RATE": "0.1", "COSTSIM_SPIKE": "1s",
				"COSTSIM_FAULT_500": "0.2", "COSTSIM_FAULT_503": "0.1", "COSTSIM_FAULT_429": "0.05",
				"COSTSIM_FAULT_DROP_BEFORE": "0.01", "COSTSIM_FAULT_DROP_AFTER": "0.02", "COSTSIM_RETRY_AFTER": "3s",
				"COSTSIM_FAULT_OPS": "createBudget, updateBudget",
			}), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		want := sim.Options{
			Seed: 9, AsOf: time.Date(2026, 6, 30, 0, 0, 0, 0, time.UTC),
			Latency: sim.Latency{Fixed: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, SpikeRate: 0.1, Spike: time.Second},
			Faults: sim.Faults{Error500: 0.5, Error503: 0.1, RateLimit429: 0.05, DropBefore: 0.01, DropAfter: 0.02,
				RetryAfter: 3 * time.Second, Ops: []string{ops.CreateBudget, ops.UpdateBudget}},
		}
		if cfg.listen != "0.0.0.0:9999" {
			t.Errorf("listen %q", cfg.listen)
		}
		if diff := cmp.Diff(want, cfg.opts, cmp.Comparer(func(a, b func() time.Time) bool { return a == nil && b == nil })); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"bad as-of", []string{"-as-of", "20261120"}, nil},
		{"rate above 1", []string{"-fault-503", "1.5"}, nil},
		{"negative latency", []string{"-latency", "-1s"}, nil},
		{"unknown op", []string{"-fault-ops", "getBudgets"}, nil},
		{"bad env", nil, map[string]string{"COSTSIM_SEED": "x"}},
		{"extra argument", []string{"serve"}, nil},
		{"unknown flag", []string{"-port", "1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseConfig(tc.args, env(tc.env), io.Discard); err == nil {
				t.Error("no error")
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		var out bytes.Buffer
		_, err := parseConfig([]string{"-h"}, env(nil), &out)
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("err %v", err)
		}
		if !strings.Contains(out.String(), "COSTSIM_FAULT_DROP_AFTER") {
			t.Errorf("usage does not name the environment variables:\n%s", out.String())
		}
	})
}
