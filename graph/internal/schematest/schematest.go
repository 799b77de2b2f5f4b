// Package schematest gives tests the gateway's schema and validated
// operations of it, without a server.
package schematest

import (
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/costgw/gateway/graph/generated"
)

// Schema is the schema the gateway serves.
var Schema = generated.NewExecutableSchema(generated.Config{}).Schema()

// Operation parses and validates q against Schema and returns its first
// operation, failing the test if q does not validate.
func Operation(t testing.TB, q string) *ast.OperationDefinition {
	t.Helper()
	doc, errs := gqlparser.LoadQuery(Schema, q)
	if len(errs) > 0 {
		t.Fatalf("query does not validate: %v", errs)
	}
	return doc.Operations[0]
}
