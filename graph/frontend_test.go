package graph_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream/sim"
)

// nodePackages returns Node.js and the absolute path of test/<dir>, whose
// node_modules hold pkgs (make test installs them); without Node.js or one
// of pkgs the test skips and says so.
func nodePackages(t *testing.T, dir string, pkgs ...string) (node, abs string) {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("../test", dir))
	if err != nil {
		t.Fatal(err)
	}
	if node, err = exec.LookPath("node"); err != nil {
		t.Skipf("node is not installed: test/%s needs Node.js", dir)
	}
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(abs, "node_modules", pkg)); err != nil {
			t.Skipf("%s is not installed: run make test, or npm ci --prefix test/%s", pkg, dir)
		}
	}
	return node, abs
}

// The client libraries a frontend uses, at run time against the gateway on
// the simulator: Apollo Client 4, urql with graphcache and relay-runtime, set
// up as docs/schema.md shows (test/frontend/setup), run by Node's test runner
// over test/frontend/runtime/*.test.mjs (nodePackages).
func TestFrontendClientsAtRunTime(t *testing.T) {
	t.Parallel()
	node, dir := nodePackages(t, "frontend", "@apollo/client", "@urql/exchange-graphcache", "relay-runtime")
	files, err := filepath.Glob(filepath.Join(dir, "runtime", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in test/frontend/runtime: %v", err)
	}
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	// A gateway whose upstream takes 300 ms a call, and the Explorer's
	// history 600 ms more, for what @defer is for: the first part of an
	// answer well before a deferred history.
	slow := newEnv(t)
	slow.sim.SetLatency(sim.Latency{Fixed: 300 * time.Millisecond})
	slow.calls.fail = func(r *http.Request) *http.Response {
		if r.URL.Path == "/v1/explorer/history" {
			// A latency on the real clock: Node's clients read the
			// gateway over TCP, and time the parts themselves.
			time.Sleep(600 * time.Millisecond)
		}
		return nil
	}
	slowSrv := httptest.NewServer(slow.h)
	defer slowSrv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// One file at a time: the machine may be busy with the other tests.
	args := append([]string{"--test", "--test-reporter=spec", "--test-concurrency=1"}, files...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COSTGW_URL="+srv.URL+"/graphql", "COSTGW_SLOW_URL="+slowSrv.URL+"/graphql",
		"COSTGW_KEY="+sim.DemoKey, "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	t.Logf("node --test test/frontend/runtime:\n%s", out)
	if err != nil {
		t.Fatalf("the client libraries' tests failed: %v", err)
	}
}
