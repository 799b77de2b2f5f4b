package graph_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/formatter"

	"github.com/costgw/gateway/graph/generated"
	"github.com/costgw/gateway/graph/internal/golden"
	"github.com/costgw/gateway/graph/resolvers"
)

// The schema the gateway serves is pinned by testdata/schema.graphql: any
// change to it shows up in review as a diff of that file. Run
// `go test ./graph -run TestSchemaGolden -update` after an intended change.
func TestSchemaGolden(t *testing.T) {
	t.Parallel()
	schema := generated.NewExecutableSchema(generated.Config{Resolvers: &resolvers.Resolver{}}).Schema()
	var buf bytes.Buffer
	formatter.NewFormatter(&buf, formatter.WithIndent("  ")).FormatSchema(schema)
	got := buf.Bytes()

	golden.Compare(t, filepath.Join("testdata", "schema.graphql"), "the served schema", got)
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

// The executor puts no index of input unmarshalers into the context
// (internal/gqlgen/templates/internal!.gotpl): graphql.UnmarshalInputFromContext
// and graphql.UnmarshalNamedInputFromContext, which read it, would fail. No
// code of the module calls them.
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
		for _, f := range []string{"UnmarshalInputFromContext", "UnmarshalNamedInputFromContext"} {
			if bytes.Contains(b, []byte(f)) {
				t.Errorf("%s calls graphql.%s, which needs the index the executor does not make", path, f)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The root of the schema is graph/schema.graphqls, as the design names it:
// the root operation types, the Node interface and the schema's own
// directives are defined there, and every area's file only extends the
// root types. The schema was split into area files with no such file.
func TestSchemaFileHoldsTheRoot(t *testing.T) {
	t.Parallel()
	schema := generated.NewExecutableSchema(generated.Config{Resolvers: &resolvers.Resolver{}}).Schema()
	file := func(d *ast.Definition) string { return filepath.Base(d.Position.Src.Name) }
	for _, root := range []*ast.Definition{schema.Query, schema.Mutation, schema.Subscription, schema.Types["Node"]} {
		if root != nil && file(root) != "schema.graphqls" {
			t.Errorf("%s is defined in %s, not schema.graphqls", root.Name, file(root))
		}
	}
	if schema.Query == nil || schema.Mutation == nil || schema.Types["Node"] == nil {
		t.Fatal("the schema has no Query, Mutation or Node")
	}
	for _, d := range schema.Directives {
		if d.Position != nil && d.Position.Src != nil && !d.Position.Src.BuiltIn && filepath.Base(d.Position.Src.Name) != "schema.graphqls" {
			t.Errorf("directive @%s is declared in %s, not schema.graphqls", d.Name, d.Position.Src.Name)
		}
	}
	// Every area's root fields are its own: in its file, extending the root.
	areas := map[string]bool{}
	for _, root := range []*ast.Definition{schema.Query, schema.Mutation} {
		for _, f := range root.Fields {
			if f.Position != nil && f.Position.Src != nil && !f.Position.Src.BuiltIn {
				areas[filepath.Base(f.Position.Src.Name)] = true
			}
		}
	}
	for _, want := range []string{"schema.graphqls", "budgets.graphqls", "explorer.graphqls", "insights.graphqls", "notifications.graphqls"} {
		if !areas[want] {
			t.Errorf("no root field comes from %s", want)
		}
	}
}

// Int64's specification is a section of docs/schema.md, published with the
// repository, and @specifiedBy points at it: at the repository of the
// module's path, and at an anchor that the document's headings make. Int64
// had no @specifiedBy; its description said it was its own specification.
func TestInt64IsSpecifiedBy(t *testing.T) {
	t.Parallel()
	schema := generated.NewExecutableSchema(generated.Config{Resolvers: &resolvers.Resolver{}}).Schema()
	d := schema.Types["Int64"].Directives.ForName("specifiedBy")
	if d == nil || d.Arguments.ForName("url") == nil {
		t.Fatal("Int64 has no @specifiedBy(url:)")
	}
	url := d.Arguments.ForName("url").Value.Raw

	mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no module line")
	}
	prefix := "https://" + string(m[1]) + "/blob/main/docs/schema.md#"
	anchor, ok := strings.CutPrefix(url, prefix)
	if !ok {
		t.Fatalf("@specifiedBy(url: %q) is not a section of docs/schema.md in the module's repository (%s…)", url, prefix)
	}
	f, err := os.Open(filepath.Join("..", "docs", "schema.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// GitHub's anchor of a heading: lower case, spaces to hyphens, and
	// nothing but letters, digits, hyphens and underscores.
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	var section strings.Builder
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "#"); ok && strings.HasPrefix(strings.TrimLeft(h, "#"), " ") {
			slug := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(strings.TrimLeft(h, "#"))), ""), " ", "-")
			if in {
				break
			}
			in = slug == anchor
			continue
		}
		if in {
			section.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !in {
		t.Fatalf("docs/schema.md has no heading with the anchor #%s", anchor)
	}
	// The section specifies the scalar: its range, its result and its input.
	for _, want := range []string{"-9223372036854775808", "9223372036854775807", "Result", "Input"} {
		if !strings.Contains(section.String(), want) {
			t.Errorf("the section #%s of docs/schema.md does not say %q", anchor, want)
		}
	}
}
