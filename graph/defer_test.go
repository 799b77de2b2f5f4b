package graph_test

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

// @defer over multipart/mixed, read by a real client library: urql runs
// the Explorer dashboard with its slow panels deferred and gets them in
// later parts, merged into one result (test/frontend/scripts/defer.mjs).
// It needs Node.js and test/frontend's npm packages (make test installs
// them); without either it skips and says so.
func TestDeferWithARealClient(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs("../test/frontend")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the @defer client test needs Node.js")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@urql", "core")); err != nil {
		t.Skip("urql is not installed: run make test, or npm ci in test/frontend")
	}
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	out, err := exec.Command(node, filepath.Join(dir, "scripts", "defer.mjs"), srv.URL+"/graphql", sim.DemoKey).CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), "defer: ok") {
		t.Fatalf("urql over @defer: %v", err)
	}
}

// A client that does not take multipart/mixed gets the whole result in one
// JSON answer, the same as without @defer.
func TestDeferWithoutMultipartIsOneAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const plain = `{ budgets(first: 3) { nodes { name metrics { variance } plannings { dimension1 } } } }`
	const deferred = `query { budgets(first: 3) { nodes { name ... @defer { metrics { variance } } ...Rows @defer(label: "rows") } } }
		fragment Rows on Budget { plannings { dimension1 } }`
	want := e.query(t, sim.DemoKey, plain, nil)
	got := e.query(t, sim.DemoKey, deferred, nil)
	if len(want.Errors)+len(got.Errors) > 0 || string(got.Data) != string(want.Data) {
		t.Errorf("with @defer, one answer:\n%s\nwithout:\n%s", got.raw, want.raw)
	}
}
