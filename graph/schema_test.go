package graph_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
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

// Every type, field, argument and enum value of the schema has a
// description: a frontend developer reads the schema in GraphiQL's
// documentation explorer and in the generated types' comments.
func TestEverythingIsDescribed(t *testing.T) {
	t.Parallel()
	schema := generated.NewExecutableSchema(generated.Config{Resolvers: &resolvers.Resolver{}}).Schema()
	for _, def := range schema.Types {
		if def.BuiltIn || strings.HasPrefix(def.Name, "__") {
			continue
		}
		if strings.TrimSpace(def.Description) == "" {
			t.Errorf("type %s has no description", def.Name)
		}
		for _, f := range def.Fields {
			if strings.HasPrefix(f.Name, "__") {
				continue
			}
			if strings.TrimSpace(f.Description) == "" {
				t.Errorf("%s.%s has no description", def.Name, f.Name)
			}
			for _, a := range f.Arguments {
				if strings.TrimSpace(a.Description) == "" {
					t.Errorf("argument %s.%s(%s) has no description", def.Name, f.Name, a.Name)
				}
			}
		}
		for _, v := range def.EnumValues {
			if strings.TrimSpace(v.Description) == "" {
				t.Errorf("enum value %s.%s has no description", def.Name, v.Name)
			}
		}
	}
}

// The executor puts no map of input unmarshalers into the context
// (internal/gqlgen/templates/internal!.gotpl): graphql.UnmarshalInputFromContext,
// which reads it, would fail with "the input context is empty". No code of
// the module calls it.
func TestNoInputUnmarshalerMap(t *testing.T) {
	t.Parallel()
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "schema_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte("UnmarshalInputFromContext")) {
			t.Errorf("%s calls graphql.UnmarshalInputFromContext, which needs the map the executor no longer makes", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
