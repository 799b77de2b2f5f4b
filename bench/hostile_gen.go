package main

// Random GraphQL documents for the hostile-traffic benchmark: walks of the
// gateway's own schema with the features an attacker reaches for (aliases,
// named and inline fragments, a fragment spread twice, @include and @skip
// with variables, arguments of every type, large first values, deep
// nesting) and, in one document in four, a mistake (an unknown field, an
// argument of the wrong type, an undeclared variable). About half are valid
// and run, many against the upstream; the rest fail validation (a mistake,
// a conflict of fields, a literal of the wrong form) or a limit. The same
// seed makes the same documents.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// randomDoc is one random document as a request body.
type randomDoc struct {
	query string
	vars  map[string]any
	body  []byte
}

// docGen makes random documents over a schema.
type docGen struct {
	schema *ast.Schema
	rnd    *rand.Rand
	real   []string // global IDs of real objects, used in queries
	bogus  []string // IDs of nothing, used in mutations too
	ids    []string // the IDs of the document being made

	// The document being made.
	varDecls []string
	vars     map[string]any
	frags    []string
	n        int  // names made so far: aliases, fragments, variables
	mistake  bool // the document is still to get its one mistake
}

// Bounds of a random document.
const (
	genMaxDepth = 9
	genMaxWidth = 5
)

// loadSchema reads the gateway's schema from the .graphqls files in dir.
func loadSchema(dir string) (*ast.Schema, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.graphqls"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no schema files in %s", dir)
	}
	var srcs []*ast.Source
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, &ast.Source{Name: f, Input: string(b)})
	}
	s, gerr := gqlparser.LoadSchema(srcs...)
	if gerr != nil {
		return nil, gerr
	}
	return s, nil
}

// newDocGen makes documents from seed. Queries name the real IDs and the
// bogus ones; mutations only the bogus ones, so that no document deletes or
// changes the data the other shapes use.
func newDocGen(schema *ast.Schema, seed uint64, real []string) *docGen {
	bogus := []string{"QnVkZ2V0Om5vLXN1Y2gtYnVkZ2V0", "not-an-id", ""}
	return &docGen{schema: schema, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), real: real, bogus: bogus}
}

// documents makes n documents.
func (g *docGen) documents(n int) []randomDoc {
	out := make([]randomDoc, n)
	for i := range out {
		q, v := g.document()
		out[i] = randomDoc{query: q, vars: v, body: mustBody(q, v)}
	}
	return out
}

// document makes one document: a query, or one time in twenty a mutation
// (on bogus IDs), with its fragments and its variables.
func (g *docGen) document() (string, map[string]any) {
	g.varDecls, g.vars, g.frags = nil, map[string]any{}, nil
	g.mistake = g.rnd.IntN(4) == 0 // one document in four is invalid on purpose
	root := g.schema.Query
	op := "query"
	g.ids = append(slices.Clone(g.real), g.bogus...)
	if g.rnd.IntN(20) == 0 && g.schema.Mutation != nil {
		root, op, g.ids = g.schema.Mutation, "mutation", g.bogus
	}
	sel := g.selectionSet(root, 1)
	var b strings.Builder
	fmt.Fprintf(&b, "%s R%d", op, g.rnd.IntN(1000))
	if len(g.varDecls) > 0 {
		fmt.Fprintf(&b, "(%s)", strings.Join(g.varDecls, ", "))
	}
	b.WriteString(" " + sel + "\n")
	for _, f := range g.frags {
		b.WriteString(f + "\n")
	}
	if g.rnd.IntN(25) == 0 {
		g.vars["undeclared"] = 1 // a variable nobody declared: harmless, and sent anyway
	}
	return b.String(), g.vars
}

func (g *docGen) name(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%d", prefix, g.n)
}

// selectionSet is { … } of some of t's fields, at depth (1: the root).
func (g *docGen) selectionSet(t *ast.Definition, depth int) string {
	var parts []string
	for range 1 + g.rnd.IntN(genMaxWidth) {
		r := g.rnd.IntN(100)
		switch {
		case r < 6:
			parts = append(parts, g.maybeAlias()+"__typename")
		case r < 9 && g.mistake:
			g.mistake = false
			parts = append(parts, g.mistaken(t))
		case r < 17 && depth < genMaxDepth:
			parts = append(parts, g.inlineFragment(t, depth))
		case r < 25 && depth < genMaxDepth:
			spread := g.namedFragment(t, depth)
			parts = append(parts, spread)
			if g.rnd.IntN(4) == 0 {
				parts = append(parts, spread) // the same fragment twice
			}
		default:
			if f := g.pickField(t); f != nil {
				parts = append(parts, g.field(f, depth))
			} else {
				parts = append(parts, "__typename")
			}
		}
	}
	return "{ " + strings.Join(parts, " ") + " }"
}

// pickField is one of t's fields, or nil when t has none (a union).
func (g *docGen) pickField(t *ast.Definition) *ast.FieldDefinition {
	var fs []*ast.FieldDefinition
	for _, f := range t.Fields {
		if !strings.HasPrefix(f.Name, "__") {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return nil
	}
	return fs[g.rnd.IntN(len(fs))]
}

func (g *docGen) maybeAlias() string {
	if g.rnd.IntN(4) == 0 {
		return g.name("a") + ": "
	}
	return ""
}

// field is a field with its arguments, maybe an alias and a directive, and
// its selections when its type has fields.
func (g *docGen) field(f *ast.FieldDefinition, depth int) string {
	var b strings.Builder
	b.WriteString(g.maybeAlias() + f.Name)
	var args []string
	for _, a := range f.Arguments {
		required := a.Type.NonNull && a.DefaultValue == nil
		if required || g.rnd.IntN(3) == 0 {
			args = append(args, a.Name+": "+g.value(a.Type, 0))
		}
	}
	if len(args) > 0 {
		b.WriteString("(" + strings.Join(args, ", ") + ")")
	}
	b.WriteString(g.directive())
	def := g.schema.Types[f.Type.Name()]
	if def != nil && (def.Kind == ast.Object || def.Kind == ast.Interface || def.Kind == ast.Union) {
		if depth >= genMaxDepth {
			b.WriteString(" { __typename }")
		} else {
			b.WriteString(" " + g.selectionSet(def, depth+1))
		}
	}
	return b.String()
}

// directive is, one time in six, @include or @skip on a variable or a
// literal.
func (g *docGen) directive() string {
	if g.rnd.IntN(6) != 0 {
		return ""
	}
	d := []string{"include", "skip"}[g.rnd.IntN(2)]
	if g.rnd.IntN(2) == 0 {
		return fmt.Sprintf(" @%s(if: %v)", d, g.rnd.IntN(2) == 0)
	}
	v := g.name("v")
	g.varDecls = append(g.varDecls, "$"+v+": Boolean!")
	g.vars[v] = g.rnd.IntN(2) == 0
	return fmt.Sprintf(" @%s(if: $%s)", d, v)
}

// possible is t itself, or one of the types a spread on t may name.
func (g *docGen) possible(t *ast.Definition) *ast.Definition {
	ps := g.schema.GetPossibleTypes(t)
	if t.Kind == ast.Object || len(ps) == 0 || g.rnd.IntN(3) == 0 {
		return t
	}
	return ps[g.rnd.IntN(len(ps))]
}

func (g *docGen) inlineFragment(t *ast.Definition, depth int) string {
	on := g.possible(t)
	return "... on " + on.Name + g.directive() + " " + g.selectionSet(on, depth+1)
}

// namedFragment defines a fragment and returns its spread. Its selections
// are made before it is added, so a fragment never spreads itself.
func (g *docGen) namedFragment(t *ast.Definition, depth int) string {
	on := g.possible(t)
	name := g.name("F")
	sel := g.selectionSet(on, depth+1)
	g.frags = append(g.frags, "fragment "+name+" on "+on.Name+" "+sel)
	return "..." + name + g.directive()
}

// mistaken is a selection that fails validation.
func (g *docGen) mistaken(t *ast.Definition) string {
	switch g.rnd.IntN(3) {
	case 0:
		return "nope" + g.name("")
	case 1:
		if f := g.pickField(t); f != nil && len(f.Arguments) > 0 {
			return f.Name + "(" + f.Arguments[0].Name + ": {wrong: true})"
		}
		return "__typename(x: 1)"
	default:
		return "__typename @include(if: $missing" + g.name("") + ")"
	}
}

// value is a literal of type t, or a variable holding one.
func (g *docGen) value(t *ast.Type, depth int) string {
	if t.Elem != nil {
		n := g.rnd.IntN(3)
		vals := make([]string, n)
		for i := range vals {
			vals[i] = g.value(t.Elem, depth+1)
		}
		return "[" + strings.Join(vals, ", ") + "]"
	}
	def := g.schema.Types[t.NamedType]
	if def == nil {
		return "null"
	}
	switch def.Kind {
	case ast.Enum:
		return def.EnumValues[g.rnd.IntN(len(def.EnumValues))].Name
	case ast.InputObject:
		if depth > 3 {
			return "{}"
		}
		var fs []string
		for _, f := range def.Fields {
			if (f.Type.NonNull && f.DefaultValue == nil) || g.rnd.IntN(3) == 0 {
				fs = append(fs, f.Name+": "+g.value(f.Type, depth+1))
			}
		}
		return "{" + strings.Join(fs, ", ") + "}"
	}
	switch t.NamedType {
	case "Int":
		n := []int{0, 1, 3, 20, 50, 200, 201, 500, 501, -1, 2147483647}[g.rnd.IntN(11)]
		if g.rnd.IntN(4) == 0 {
			v := g.name("i")
			g.varDecls = append(g.varDecls, "$"+v+": Int")
			g.vars[v] = n
			return "$" + v
		}
		return fmt.Sprint(n)
	case "Float":
		return []string{"0", "1.5", "-3", "1e300"}[g.rnd.IntN(4)]
	case "Boolean":
		return fmt.Sprint(g.rnd.IntN(2) == 0)
	case "ID":
		return fmt.Sprintf("%q", g.ids[g.rnd.IntN(len(g.ids))])
	case "Date":
		return []string{`"2026-10-01"`, `"2026-13-45"`, `"yesterday"`}[g.rnd.IntN(3)]
	case "DateTime":
		return `"2026-10-01T00:00:00.000Z"`
	case "JSON":
		return []string{`{a: 1}`, `[1, 2, 3]`, `"x"`, `{a: {b: {c: [1, {d: null}]}}}`}[g.rnd.IntN(4)]
	default: // String and anything else
		return fmt.Sprintf("%q", []string{"x", "product_product_name", "line_item_unblended_cost", "day",
			"not-a-cursor", strings.Repeat("z", 200)}[g.rnd.IntN(6)])
	}
}

// docFeatures says which features a set of documents used, for a test.
func docFeatures(docs []randomDoc) []string {
	var out []string
	for _, f := range []struct{ name, marker string }{
		{"alias", ": "}, {"fragment", "fragment F"}, {"inline fragment", "... on "}, {"include", "@include"},
		{"skip", "@skip"}, {"variable", "$"}, {"mutation", "mutation "},
	} {
		if slices.ContainsFunc(docs, func(d randomDoc) bool { return strings.Contains(d.query, f.marker) }) {
			out = append(out, f.name)
		}
	}
	return out
}
