package limits

import (
	"encoding/json"
	"math"
	"reflect"

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
		if err := checkValue(schema, d.Type, vars[d.Variable], ast.Path{ast.PathName("variable"), ast.PathName(d.Variable)}); err != nil {
			return err
		}
	}
	return nil
}

// checkValue checks v, a value of type t at path.
func checkValue(schema *ast.Schema, t *ast.Type, v any, path ast.Path) *gqlerror.Error {
	if v == nil {
		return nil
	}
	if t.Elem != nil {
		list := reflect.ValueOf(v)
		if list.Kind() != reflect.Slice {
			return checkValue(schema, t.Elem, v, path)
		}
		for i := range list.Len() {
			if err := checkValue(schema, t.Elem, list.Index(i).Interface(), append(path, ast.PathIndex(i))); err != nil {
				return err
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
			return nil // gqlparser refused it
		}
		for _, f := range def.Fields {
			if err := checkValue(schema, f.Type, m[f.Name], append(path, ast.PathName(f.Name))); err != nil {
				return err
			}
		}
	case ast.Scalar:
		switch def.Name {
		case "Int":
			ok = isInteger(v)
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
		return withCode(gqlerror.ErrorPathf(path, "%s is not a value of type %s", b, def.Name), codes.ValidationFailed)
	}
	return withCode(gqlerror.ErrorPathf(path, "the value is not of type %s", def.Name), codes.ValidationFailed)
}

// isNumber reports whether v is a JSON number, as the variables decode.
func isNumber(v any) bool {
	switch v.(type) {
	case json.Number, float64, float32, int, int32, int64:
		return true
	}
	return false
}

// isInteger reports whether v is a JSON number with no fraction.
func isInteger(v any) bool {
	switch v := v.(type) {
	case int, int32, int64:
		return true
	case float64:
		return v == math.Trunc(v) && !math.IsInf(v, 0)
	case json.Number:
		_, err := v.Int64() // written as an integer, as gqlparser takes it
		return err == nil
	}
	return false
}
