package graph_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vektah/gqlparser/v2/formatter"

	"github.com/costgw/gateway/graph/generated"
	"github.com/costgw/gateway/graph/resolvers"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// The schema the gateway serves is pinned by testdata/schema.graphql: any
// change to it shows up in review as a diff of that file. Run
// `go test ./graph -run TestSchemaGolden -update` after an intended change.
func TestSchemaGolden(t *testing.T) {
	t.Parallel()
	schema := generated.NewExecutableSchema(generated.Config{Resolvers: &resolvers.Resolver{}}).Schema()
	var buf bytes.Buffer
	formatter.NewFormatter(&buf, formatter.WithIndent("  ")).FormatSchema(schema)
	got := buf.Bytes()

	path := filepath.Join("testdata", "schema.graphql")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("schema differs from %s (-golden +served); run with -update if the change is intended:\n%s", path, diff)
	}
}
