package limits

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/codes"
)

// checkVariables holds an operation's variables, as the request sent them,
// to the GraphQL spec's input coercion where gqlparser, which coerces them
// next, is lenient: an enum value is a string written exactly as the schema
// writes it (gqlparser compares without case, and takes an integer), an Int
// is a JSON integer and a Float a JSON number (gqlparser takes the string
// "2"), a Boolean a JSON boolean and a String a JSON string. An Int may be
// written with a fraction of zero or an exponent (2.0, 2e0): JSON does not
// tell it from 2, graphql-js reads it as 2, and clients that write numbers as
// floats send it so; the variable is then set to the integer, which is what
// gqlgen's Int reads. A variable that
// does not coerce is a request error (GRAPHQL_VALIDATION_FAILED), as
// gqlparser's own refusals are, and says which value is wrong (gqlparser's
// says "cannot use value 0 as Int" of 2.5, and "not a slice" of [1] for an
// input object). Null where the operation needs a value is refused after
// (nullWhereNonNull); non-null variables, and the gateway's scalars (Date,
// JSON, …), are checked after that.
func checkVariables(schema *ast.Schema, op *ast.OperationDefinition, vars map[string]any) *gqlerror.Error {
	for _, d := range op.VariableDefinitions {
		fixed, bad := checkValue(schema, d.Type, vars[d.Variable])
		if fixed != nil {
			vars[d.Variable] = fixed
		}
		if bad == nil {
			continue
		}
		path := ast.Path{ast.PathName("variable"), ast.PathName(d.Variable)}
		for i := len(bad.path) - 1; i >= 0; i-- {
			path = append(path, bad.path[i])
		}
		return withCode(gqlerror.ErrorPathf(path, "%s", bad.msg), codes.ValidationFailed)
	}
	return nullWhereNonNull(op, vars)
}

// nullWhereNonNull refuses a variable the request set to null that op uses
// where a value of a non-null type is expected. A nullable variable with a
// default may stand there (the spec's All Variable Usages Are Allowed), but
// its value null may not (CoerceArgumentValues): gqlgen would hand the
// resolver the type's zero value, or panic on @skip(if: null). The walk runs
// only for a request that sets a nullable variable to null.
func nullWhereNonNull(op *ast.OperationDefinition, vars map[string]any) *gqlerror.Error {
	var null []string
	for _, d := range op.VariableDefinitions {
		if v, set := vars[d.Variable]; set && v == nil && !d.Type.NonNull {
			null = append(null, d.Variable)
		}
	}
	if len(null) == 0 {
		return nil
	}
	var inValue func(*ast.Value) *ast.Value
	inValue = func(v *ast.Value) *ast.Value {
		if v == nil {
			return nil
		}
		if v.Kind == ast.Variable && v.ExpectedType != nil && v.ExpectedType.NonNull && slices.Contains(null, v.Raw) {
			return v
		}
		for _, c := range v.Children {
			if u := inValue(c.Value); u != nil {
				return u
			}
		}
		return nil
	}
	inArgs := func(list ast.ArgumentList) *ast.Value {
		for _, a := range list {
			if u := inValue(a.Value); u != nil {
				return u
			}
		}
		return nil
	}
	inDirectives := func(list ast.DirectiveList) *ast.Value {
		for _, d := range list {
			if u := inArgs(d.Arguments); u != nil {
				return u
			}
		}
		return nil
	}
	seen := map[*ast.FragmentDefinition]bool{}
	var inSet func(ast.SelectionSet) *ast.Value
	inSet = func(set ast.SelectionSet) *ast.Value {
		for _, sel := range set {
			var u *ast.Value
			switch s := sel.(type) {
			case *ast.Field:
				if u = inArgs(s.Arguments); u == nil {
					if u = inDirectives(s.Directives); u == nil {
						u = inSet(s.SelectionSet)
					}
				}
			case *ast.InlineFragment:
				if u = inDirectives(s.Directives); u == nil {
					u = inSet(s.SelectionSet)
				}
			case *ast.FragmentSpread:
				if u = inDirectives(s.Directives); u == nil && s.Definition != nil && !seen[s.Definition] {
					seen[s.Definition] = true
					u = inSet(s.Definition.SelectionSet)
				}
			}
			if u != nil {
				return u
			}
		}
		return nil
	}
	u := inDirectives(op.Directives)
	if u == nil {
		u = inSet(op.SelectionSet)
	}
	if u == nil {
		return nil
	}
	return withCode(gqlerror.ErrorPathf(ast.Path{ast.PathName("variable"), ast.PathName(u.Raw)},
		"$%s is null, but the operation uses it where a value of type %s is expected", u.Raw, u.ExpectedType), codes.ValidationFailed)
}

// badValue is a value that does not coerce: what is wrong, and where below
// the variable, innermost first (the path is built only for a refusal).
type badValue struct {
	msg  string
	path []ast.PathElement
}

// checkValue checks v, a value of type t as the request sent it. fixed,
// when not nil, is what v is to be replaced with: an Int written as a float.
func checkValue(schema *ast.Schema, t *ast.Type, v any) (fixed any, bad *badValue) {
	if v == nil {
		return nil, nil
	}
	if t.Elem != nil {
		list, ok := v.([]any)
		if !ok {
			return checkValue(schema, t.Elem, v) // one value stands for a list of one
		}
		for i, x := range list {
			fixed, bad := checkValue(schema, t.Elem, x)
			if fixed != nil {
				list[i] = fixed
			}
			if bad != nil {
				bad.path = append(bad.path, ast.PathIndex(i))
				return nil, bad
			}
		}
		return nil, nil
	}
	def := schema.Types[t.NamedType]
	if def == nil {
		return nil, nil
	}
	ok := true
	switch def.Kind {
	case ast.Enum:
		s, isString := v.(string)
		ok = isString && def.EnumValues.ForName(s) != nil
	case ast.InputObject:
		m, isObject := v.(map[string]any)
		if ok = isObject; !ok {
			break
		}
		for _, f := range def.Fields {
			fixed, bad := checkValue(schema, f.Type, m[f.Name])
			if fixed != nil {
				m[f.Name] = fixed
			}
			if bad != nil {
				bad.path = append(bad.path, ast.PathName(f.Name))
				return nil, bad
			}
		}
	case ast.Scalar:
		switch def.Name {
		case "Int":
			ok = isInt32(v)
			if !ok {
				if n, integral := integralInt32(v); integral {
					return n, nil
				}
			}
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
		return nil, nil
	}
	if b, err := json.Marshal(v); err == nil && len(b) <= 64 {
		return nil, &badValue{msg: fmt.Sprintf("%s is not a value of type %s", b, def.Name)}
	}
	return nil, &badValue{msg: "the value is not of type " + def.Name}
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

// integralInt32 returns v, a JSON number written with a fraction or an
// exponent, as the integer it stands for when it is one in the range of Int,
// reading it as graphql-js does, as a double: 2.0 and 2e0 are 2, 2.5 and
// 3e9 are no Int. Parsing is linear in the number's length, whatever its
// exponent.
func integralInt32(v any) (json.Number, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return "", false
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return "", false
	}
	return json.Number(strconv.FormatInt(int64(f), 10)), true
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
