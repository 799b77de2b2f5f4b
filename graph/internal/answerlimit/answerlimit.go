// Package answerlimit carries -max-answer-values from the limits, which
// know it, to the executor, which counts an answer's values against it
// (internal/gqlgen's templates): a package below both.
package answerlimit

import (
	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/codes"
)

const stats = "costgw.maxAnswerValues"

// JSONBytes is what a value of an answer is worth, in bytes of a JSON
// scalar: about what a field or a list's item of an answer takes as JSON.
// A JSON scalar counts one value and one more for each JSONBytes of its
// text, so that a large one, which the upstream may store for any budget,
// is counted by its size, not as one value.
const JSONBytes = 40

// Set keeps max as the bound on the values of the answer of oc's
// operation; 0 is none.
func Set(oc *graphql.OperationContext, max int) {
	if max > 0 {
		oc.Stats.SetExtension(stats, max)
	}
}

// Of returns the bound Set kept for oc's operation, 0 for none.
func Of(oc *graphql.OperationContext) int {
	if oc == nil {
		return 0
	}
	max, _ := oc.Stats.GetExtension(stats).(int)
	return max
}

// Error is the error of an answer that went past max values: the answer's
// whole, since a part of it would be a wrong answer, not a short one.
func Error(max int64) *gqlerror.Error {
	return codes.Errorf(codes.MaxAnswerValues,
		"the answer would hold more than %d values (fields and list items; -max-answer-values): select less, or page through it", max).
		With("maxValues", max).GraphQL()
}

// MutationError is the error of a mutation's answer that went past max
// values: its writes were made, and its outcome (payloads, userErrors,
// idempotencyKey) is kept beside the error, with what it holds beyond null.
func MutationError(max int64) *gqlerror.Error {
	return codes.Errorf(codes.MaxAnswerValues,
		"the mutation's writes were made, but its answer would hold more than %d values (fields and list items; "+
			"-max-answer-values): what their payloads hold past that is null; read it back with a query that selects less", max).
		With("maxValues", max).GraphQL()
}
