package limits

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/codes"
)

// checkVariables holds an operation's variables, as the request sent them,
// to the GraphQL spec's input coercion where gqlparser, which coerces them
// next, is lenient: an enum value is a string written exactly as the schema
// writes it (gqlparser compares without case, and takes an integer), an Int
// is a JSON integer and a Float a JSON number (gqlparser takes the string
// "2"), a Boolean a JSON boolean and a String a JSON string. A variable that
// does not coerce is a request error (GRAPHQL_VALIDATION_FAILED), as
// gqlparser's own refusals are, and says which value is wrong (gqlparser's
// says "cannot use value 0 as Int" of 2.5); nullness, and the gateway's
// scalars (Date, JSON, …), are checked after.
func checkVariables(schema *ast.Schema, op *ast.OperationDefinition, vars map[string]any) *gqlerror.Error {
	for _, d := range op.VariableDefinitions {
		bad := checkValue(schema, d.Type, vars[d.Variable])
		if bad == nil {
			continue
		}
		path := ast.Path{ast.PathName("variable"), ast.PathName(d.Variable)}
		for i := len(bad.path) - 1; i >= 0; i-- {
			path = append(path, bad.path[i])
		}
		return withCode(gqlerror.ErrorPathf(path, "%s", bad.msg), codes.ValidationFailed)
	}
	return nil
}

// badValue is a value that does not coerce: what is wrong, and where below
// the variable, innermost first (the path is built only for a refusal).
type badValue struct {
	msg  string
	path []ast.PathElement
}

// checkValue checks v, a value of type t as the request sent it.
func checkValue(schema *ast.Schema, t *ast.Type, v any) *badValue {
	if v == nil {
		return nil
	}
	if t.Elem != nil {
		list, ok := v.([]any)
		if !ok {
			return checkValue(schema, t.Elem, v) // one value stands for a list of one
		}
		for i, x := range list {
			if bad := checkValue(schema, t.Elem, x); bad != nil {
				bad.path = append(bad.path, ast.PathIndex(i))
				return bad
			}
		}
		return nil
	}
	def := schema.Types[t.NamedType]
	if def == nil {
		return nil
	}
	ok := true
	switch def.Kind {
	case ast.Enum:
		s, isString := v.(string)
		ok = isString && def.EnumValues.ForName(s) != nil
	case ast.InputObject:
		m, isObject := v.(map[string]any)
		if !isObject {
			return nil // gqlparser refuses it
		}
		for _, f := range def.Fields {
			if bad := checkValue(schema, f.Type, m[f.Name]); bad != nil {
				bad.path = append(bad.path, ast.PathName(f.Name))
				return bad
			}
		}
	case ast.Scalar:
		switch def.Name {
		case "Int":
			ok = isInt32(v)
		case "Float":
			ok = isNumber(v)
		case "Boolean":
			_, ok = v.(bool)
		case "String":
			_, ok = v.(string)
		case "ID":
			_, isString := v.(string)
			ok = isString || isInteger(v)
		}
	}
	if ok {
		return nil
	}
	if b, err := json.Marshal(v); err == nil && len(b) <= 64 {
		return &badValue{msg: fmt.Sprintf("%s is not a value of type %s", b, def.Name)}
	}
	return &badValue{msg: "the value is not of type " + def.Name}
}

// The transport decodes the variables' numbers as json.Number, as gqlgen's
// own transports do, so a number is one and nothing else is.

// isInt32 reports whether v is a JSON integer in the range of GraphQL's
// Int, a signed 32-bit integer.
func isInt32(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	i, err := n.Int64()
	return err == nil && i >= math.MinInt32 && i <= math.MaxInt32
}

// isNumber reports whether v is a JSON number.
func isNumber(v any) bool {
	_, ok := v.(json.Number)
	return ok
}

// isInteger reports whether v is a JSON number written as an integer, as
// gqlparser takes it.
func isInteger(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	_, err := n.Int64()
	return err == nil
}
