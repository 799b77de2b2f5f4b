package graph_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

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
			body, _ := json.Marshal(map[string]any{"query": q})
			req := postRequest(body, key)
			req.Header.Set("Accept", "application/graphql-response+json")
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			r := decode(t, rec)
			if rec.Code != 400 || r.code(t) != "GRAPHQL_VALIDATION_FAILED" || r.Data != nil ||
				!strings.Contains(r.Errors[0].Message, "introspection is turned off") {
				t.Errorf("key %q, %s: %d %s", key, q, rec.Code, rec.Body)
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
