package graph_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/cost"
	"github.com/costgw/gateway/graph/internal/introspection"
	"github.com/costgw/gateway/graph/internal/schematest"
	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/upstream/sim"
)

// With introspection off, a query of the schema is a request error, with
// or without a key: GRAPHQL_VALIDATION_FAILED, 400 under
// application/graphql-response+json, and no upstream call. __schema and
// __type once failed as fields, with INTERNAL.
func TestIntrospectionOffIsARequestError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withoutIntrospection())
	for _, key := range []string{"", sim.DemoKey} {
		for _, q := range []string{
			`{ __schema { queryType { name } } }`,
			`{ __type(name: "Budget") { name } }`,
			`query Probe { budgets(first: 1) { nodes { id } } ...F } fragment F on Query { __schema { types { name } } }`,
		} {
			r := e.queryAs(t, "application/graphql-response+json", key, q, nil)
			if r.status != 400 || r.code(t) != "GRAPHQL_VALIDATION_FAILED" || r.Data != nil ||
				!strings.Contains(r.Errors[0].Message, "introspection is turned off") {
				t.Errorf("key %q, %s: %d %s", key, q, r.status, r.raw)
			}
		}
	}
	if calls := e.calls.take(); len(calls) != 0 {
		t.Errorf("refused introspection made upstream calls: %v", calls)
	}
	// __typename is not introspection of the schema.
	var data struct {
		Typename string `json:"__typename"`
	}
	e.mustQuery(t, "", `{ __typename }`, nil, &data)
	if data.Typename != "Query" {
		t.Errorf("__typename = %q", data.Typename)
	}
}

// With introspection off no validation error names what the schema has
// ("Did you mean …?"): not a field, an argument, an enum value, an input
// field or a type. Arguments, enum values and types were still suggested.
func TestIntrospectionOffSuggestsNoName(t *testing.T) {
	t.Parallel()
	queries := []string{
		`{ budgets(first: 1) { nodez { id } } }`,
		`{ budgets(frist: 1) { nodes { id } } }`,
		`mutation { updateBudget(input: {id: "x", status: ACTIV}) { idempotencyKey } }`,
		`mutation { updateBudget(input: {id: "x", nmae: "n"}) { idempotencyKey } }`,
		`query($n: Intt) { budgets(first: $n) { nodes { id } } }`,
		`{ budgets(first: 1) }`,
	}
	on, off := newEnv(t), newEnv(t, withoutIntrospection())
	for _, q := range queries {
		if r := on.query(t, sim.DemoKey, q, nil); r.code(t) != "GRAPHQL_VALIDATION_FAILED" {
			t.Fatalf("%s: %+v", q, r.Errors)
		}
		r := off.query(t, sim.DemoKey, q, nil)
		if r.code(t) != "GRAPHQL_VALIDATION_FAILED" || bytes.Contains(r.raw, []byte("Did you mean")) {
			t.Errorf("%s: %s", q, r.raw)
		}
	}
	// The same documents with introspection on do suggest, so the check
	// above reads the errors it means to.
	suggested := 0
	for _, q := range queries {
		if bytes.Contains(on.query(t, sim.DemoKey, q, nil).raw, []byte("Did you mean")) {
			suggested++
		}
	}
	if suggested < 4 {
		t.Errorf("only %d of %d documents get a suggestion with introspection on", suggested, len(queries))
	}
}

// thirtyTypes is the attacker's query: 30 aliases (as many as -max-aliases
// allows) of __schema.types with most of what a type has, 13.5 KB, under
// the 32 KB a request without a key may send. It answered 3 MB for 110 ms
// of CPU, without a key.
func thirtyTypes() string {
	const body = `name kind description fields(includeDeprecated:true){ name description isDeprecated deprecationReason args{ name description defaultValue type{ name kind ofType{ name kind ofType { name kind } } } } type{ name kind ofType{ name kind ofType{ name kind } } } } inputFields{ name description defaultValue type{ name kind ofType { name kind } } } enumValues(includeDeprecated:true){ name description } interfaces{name} possibleTypes{name}`
	var b strings.Builder
	b.WriteString("{ __schema { ")
	for i := range 30 {
		fmt.Fprintf(&b, "t%d: types { %s } ", i, body)
	}
	b.WriteString("} }")
	return b.String()
}

// Introspection is bounded before it runs, with or without a key: the
// 30-alias query is refused with MAX_INTROSPECTION_LIMIT, for a small
// fraction of what running it allocated.
func TestIntrospectionIsBoundedBeforeItRuns(t *testing.T) {
	e := newEnv(t)
	body := queryBody(thirtyTypes())
	for _, key := range []string{"", sim.DemoKey} {
		var r response
		header := []string{"Accept", "application/graphql-response+json"}
		if key != "" {
			header = append(header, "Authorization", "Bearer "+key)
		}
		e.post(t, body, header...) // the document's first parse and validation, then cached
		alloc := allocated(func() { r = e.post(t, body, header...) })
		if r.status != 400 || r.code(t) != string(codes.MaxIntrospection) || r.Data != nil || len(r.raw) > 1<<10 {
			t.Fatalf("key %q: %d %.300s", key, r.status, r.raw)
		}
		if got := r.Errors[0].Extensions["estimatedValues"]; got == nil || got.(float64) <= limits.MaxIntrospectionValues {
			t.Errorf("key %q: estimatedValues %v", key, got)
		}
		// Running it allocated some 60 MB; its refusal, from the cache of
		// checked documents, allocates about as much as its body.
		if alloc > 512<<10 {
			t.Errorf("key %q: the refusal allocated %d bytes", key, alloc)
		}
	}
	if calls := e.calls.take(); len(calls) != 0 {
		t.Errorf("upstream calls: %v", calls)
	}
}

// The introspection bound admits every tool's introspection query without a
// key, graphql-js's getIntrospectionQuery with every option on and at its
// default (GraphiQL in the playground, graphql-codegen, relay-compiler's
// schema download), with room: each is at most half the bound, so a
// schema that grows past that fails here first.
func TestIntrospectionLimitAdmitsTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	counts := cost.NewIntrospectionCounts(schematest.Schema)
	for name, q := range map[string]string{
		"every option":    introspection.Query,
		"default":         introspection.QueryOf(introspection.Options{}),
		"graphiql":        introspection.QueryOf(introspection.Options{InputValueDeprecation: true, SchemaDescription: true}),
		"codegen":         introspection.QueryOf(introspection.Options{SpecifiedByURL: true, DirectiveIsRepeatable: true, SchemaDescription: true, InputValueDeprecation: true, OneOf: true}),
		"type depth 12":   introspection.QueryOf(introspection.Options{TypeDepth: 12, InputValueDeprecation: true, OneOf: true}),
		"no descriptions": introspection.QueryOf(introspection.Options{NoDescriptions: true}),
	} {
		if r := e.query(t, "", q, nil); len(r.Errors) > 0 || len(r.Data) < 50<<10 {
			t.Errorf("%s: %d %.300s", name, r.status, r.raw)
		}
		doc, errs := gqlparser.LoadQuery(schematest.Schema, q)
		if len(errs) > 0 {
			t.Fatalf("%s: %v", name, errs)
		}
		if v := cost.IntrospectionValues(doc.Operations[0], counts); v > limits.MaxIntrospectionValues/2 {
			t.Errorf("%s writes an estimated %d values: the schema has grown to more than half of limits.MaxIntrospectionValues (%d); raise it, and say so in docs/security.md",
				name, v, limits.MaxIntrospectionValues)
		}
	}
}
