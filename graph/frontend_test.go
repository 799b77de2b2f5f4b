package graph_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream/sim"
)

// The client libraries a frontend uses, at run time against the gateway on
// the simulator: Apollo Client 4, urql with graphcache and relay-runtime, set
// up as docs/schema.md shows (test/frontend/setup), run by Node's test runner
// over test/frontend/runtime/*.test.mjs (frontendPackages).
func TestFrontendClientsAtRunTime(t *testing.T) {
	t.Parallel()
	node, dir := frontendPackages(t, "@apollo/client", "@urql/exchange-graphcache", "relay-runtime")
	files, err := filepath.Glob(filepath.Join(dir, "runtime", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in test/frontend/runtime: %v", err)
	}
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// One file at a time: the machine may be busy with the other tests.
	args := append([]string{"--test", "--test-reporter=spec", "--test-concurrency=1"}, files...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COSTGW_URL="+srv.URL+"/graphql", "COSTGW_KEY="+sim.DemoKey, "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	t.Logf("node --test test/frontend/runtime:\n%s", out)
	if err != nil {
		t.Fatalf("the client libraries' tests failed: %v", err)
	}
}
