package graph_test

import (
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The graphql-http package's server audit (GraphQL-over-HTTP spec) runs
// against the real handler: every MUST and every SHOULD passes. It needs
// Node.js and `npm ci --prefix test/graphql-http` (.ci/run does both); where
// either is missing the test skips and says so.
func TestGraphQLOverHTTPAudit(t *testing.T) {
	node, dir := nodePackages(t, "graphql-http", "graphql-http")
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	out, err := exec.Command(node, filepath.Join(dir, "audit.mjs"), srv.URL+"/graphql").CombinedOutput()
	t.Logf("graphql-http audit:\n%s", out)
	if err != nil {
		t.Fatalf("a MUST or SHOULD audit failed: %v", err)
	}
	if !strings.Contains(string(out), "audit:") {
		t.Fatal("the audit printed no summary")
	}
}
