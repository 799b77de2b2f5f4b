package cost_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/client"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/costgw/gateway/graph/cost"
	"github.com/costgw/gateway/graph/generated"
	"github.com/costgw/gateway/graph/internal/introspection"
	"github.com/costgw/gateway/graph/internal/schematest"
)

// values counts what a decoded GraphQL answer writes as IntrospectionValues
// counts it: every member of every object.
func values(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			n += 1 + values(x)
		}
	case []any:
		for _, x := range v {
			n += values(x)
		}
	}
	return n
}

// The introspection estimate is never below what gqlgen's introspection
// writes, and is exact where the selection reads every object of a kind,
// as the tools' introspection queries do: it is the schema's own counts,
// not a guess.
func TestIntrospectionValues(t *testing.T) {
	t.Parallel()
	es := generated.NewExecutableSchema(generated.Config{})
	srv := handler.New(es)
	srv.AddTransport(transport.POST{})
	srv.Use(extension.Introspection{})
	c := client.New(srv)
	counts := cost.NewIntrospectionCounts(es.Schema())
	typesBody := `name kind description fields(includeDeprecated: true) { name args { name type { name kind ofType { name kind } } } type { name kind ofType { name kind ofType { name kind } } } }
		inputFields { name defaultValue type { name kind ofType { name kind } } } enumValues(includeDeprecated: true) { name } interfaces { name } possibleTypes { name }`
	aliases := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, " t%d: types { %s }", i, typesBody)
		}
		return "{ __schema {" + b.String() + " } }"
	}
	tests := []struct {
		name  string
		query string
		exact bool
	}{
		{"graphiql, every option", introspection.Query, true},
		{"getIntrospectionQuery default", introspection.QueryOf(introspection.Options{}), true},
		{"typeDepth 3", introspection.QueryOf(introspection.Options{TypeDepth: 3}), true},
		{"one types", aliases(1), true},
		{"30 aliases of types", aliases(30), true},
		{"directives", `{ __schema { directives { name locations args { name type { kind name ofType { kind name } } } } } }`, true},
		{"typename", `{ __typename }`, true},
		{"type by name", `{ __type(name: "Budget") { name fields { name type { name kind ofType { name kind } } } } }`, false},
		{"types read again", `{ __schema { types { fields { type { fields { name } } } } } }`, false},
		{"interfaces", `{ __schema { types { interfaces { name fields { name } } possibleTypes { name } } } }`, false},
		{"a fragment spread twice", `{ __schema { types { ...T ...T } } } fragment T on __Type { name ...N ...N } fragment N on __Type { kind }`, true},
		{"fragments on the root", `query { ...Q ... on Query { __schema { queryType { name } } } } fragment Q on Query { __schema { types { name } } }`, false}, // __schema twice: counted twice, run once
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var resp map[string]any
			if err := c.Post(tc.query, &resp); err != nil {
				t.Fatal(err)
			}
			est := cost.IntrospectionValues(schematest.Operation(t, tc.query), counts)
			got := values(resp)
			if est < got || (tc.exact && est != got) {
				t.Errorf("estimate %d, the answer writes %d", est, got)
			}
		})
	}
	// What is not introspection is the upstream estimate's: it counts nothing here.
	if v := cost.IntrospectionValues(schematest.Operation(t, `{ budgets(first: 1) { nodes { id } } }`), counts); v != 0 {
		t.Errorf("a query of budgets: %d introspection values", v)
	}
}
