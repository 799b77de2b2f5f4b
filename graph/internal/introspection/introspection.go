// Package introspection holds GraphiQL's introspection query, which tests
// use as the largest document a real client sends without a key.
package introspection

import "strings"

// Query is GraphiQL's introspection query, as graphql-js writes it with
// every option on.
const Query = `query IntrospectionQuery {
  __schema {
    description
    queryType { name kind }
    mutationType { name kind }
    subscriptionType { name kind }
    types { ...FullType }
    directives { name description isRepeatable locations args(includeDeprecated: true) { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description specifiedByURL isOneOf
  fields(includeDeprecated: true) { name description args(includeDeprecated: true) { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields(includeDeprecated: true) { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue isDeprecated deprecationReason }
fragment TypeRef on __Type {
  kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
  ofType { kind name ofType { kind name ofType { kind name } } } } } } } } }
}`

// Options are graphql-js's getIntrospectionQuery options: what GraphiQL,
// graphql-codegen and relay's tools ask for varies among them.
type Options struct {
	NoDescriptions, SpecifiedByURL, DirectiveIsRepeatable, SchemaDescription, InputValueDeprecation, OneOf bool
	// TypeDepth is how many ofType levels TypeRef reads; 0 means 9, the
	// default.
	TypeDepth int
}

// QueryOf is getIntrospectionQuery(o) of graphql-js 16, written out.
func QueryOf(o Options) string {
	opt := func(on bool, s string) string {
		if on {
			return s
		}
		return ""
	}
	desc := opt(!o.NoDescriptions, "description")
	depth := o.TypeDepth
	if depth == 0 {
		depth = 9
	}
	typeRef := "kind name"
	for range depth {
		typeRef += " ofType { name kind"
	}
	typeRef += strings.Repeat(" }", depth)
	dep := opt(o.InputValueDeprecation, "(includeDeprecated: true)")
	return `query IntrospectionQuery {
  __schema {
    ` + opt(o.SchemaDescription, desc) + `
    queryType { name kind }
    mutationType { name kind }
    subscriptionType { name kind }
    types { ...FullType }
    directives { name ` + desc + ` ` + opt(o.DirectiveIsRepeatable, "isRepeatable") + ` locations args` + dep + ` { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name ` + desc + ` ` + opt(o.SpecifiedByURL, "specifiedByURL") + ` ` + opt(o.OneOf, "isOneOf") + `
  fields(includeDeprecated: true) { name ` + desc + ` args` + dep + ` { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields` + dep + ` { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name ` + desc + ` isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name ` + desc + ` type { ...TypeRef } defaultValue ` +
		opt(o.InputValueDeprecation, "isDeprecated deprecationReason") + ` }
fragment TypeRef on __Type { ` + typeRef + ` }`
}
