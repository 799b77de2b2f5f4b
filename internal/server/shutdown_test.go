package server

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

// shutdownQuery costs two upstream tiers: the budgets list, then each
// budget's detail. With 300ms of upstream latency it takes at least 600ms.
const shutdownQuery = `query Drain { budgets(first: 2) { nodes { name metrics { variance } } } }`

// inflight is the outcome of one request sent before shutdown.
type inflight struct {
	status int
	ans    gqlResponse
	err    error
	done   time.Time
}

// sendInFlight starts n requests for shutdownQuery, each on its own
// connection, and returns their outcomes as they finish.
func sendInFlight(t *testing.T, baseURL string, n int) <-chan inflight {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	out := make(chan inflight, n)
	for range n {
		go func() {
			status, ans, err := postGraphQL(t, client, baseURL, sim.DemoKey, shutdownQuery)
			out <- inflight{status, ans, err, time.Now()}
		}()
	}
	return out
}

// waitFor polls cond until it holds or d passes: for what no event tells,
// such as another server's counters or whether a port still accepts.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// refused reports whether a new connection to addr is refused.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

// checkDrained checks that all n requests answered 200 with data and no
// error, and that each finished after since.
func checkDrained(t *testing.T, results <-chan inflight, n int, since time.Time) {
	t.Helper()
	var late int
	for range n {
		r := <-results
		if r.err != nil || r.status != http.StatusOK || len(r.ans.Errors) > 0 {
			t.Errorf("a request in flight at shutdown got %d %v %+v", r.status, r.err, r.ans.Errors)
			continue
		}
		var data struct {
			Budgets struct{ Nodes []struct{ Name string } }
		}
		if err := json.Unmarshal(r.ans.Data, &data); err != nil || len(data.Budgets.Nodes) != 2 || data.Budgets.Nodes[1].Name == "" {
			t.Errorf("a request in flight at shutdown got data %s (%v)", r.ans.Data, err)
		}
		if r.done.After(since) {
			late++
		}
	}
	if late != n {
		t.Errorf("%d of %d requests finished after shutdown began; the test did not catch them in flight", late, n)
	}
}

// TestGracefulShutdown ends run's context, as SIGTERM does, while many
// requests wait on a slow upstream: every one of them gets its whole answer,
// new connections are refused at once, and run returns without error.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	s, up := simUpstream(t, sim.Options{Latency: sim.Latency{Fixed: 300 * time.Millisecond}})
	const n = 50
	// Every request in flight at once, so that all n are at the upstream
	// when the shutdown begins (the default bound would queue some).
	gw := startGateway(t, nil, "-upstream", up.URL, "-log-level", "debug", "-requests-in-flight", strconv.Itoa(n), "-cache", "off")

	results := sendInFlight(t, gw.url, n)
	// A request is in flight once the upstream has its first call. The
	// gateway's probe of the upstream at start is a GET /v1/budgets too.
	waitFor(t, 10*time.Second, "the requests did not reach the upstream", func() bool {
		return s.Calls(ops.ListBudgets) >= n+1
	})

	shutdownAt := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- gw.stop() }()

	var refusedWhileDraining atomic.Bool
	waitFor(t, 2*time.Second, "new connections are still accepted after shutdown began", func() bool {
		if refused(gw.addr) {
			refusedWhileDraining.Store(len(stopped) == 0)
			return true
		}
		return false
	})
	if !refusedWhileDraining.Load() {
		t.Errorf("new connections were refused only after the drain ended")
	}
	checkDrained(t, results, n, shutdownAt)

	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("run returned %v after a graceful shutdown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after shutdown")
	}
	if got := s.Calls(ops.GetBudget); got != 2*n {
		t.Errorf("the upstream saw %d budget reads, want %d", got, 2*n)
	}
	logs := gw.logs.String()
	for _, want := range []string{"shutting down", "stopped: every request answered"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
}
