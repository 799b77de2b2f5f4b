// Package limits rejects GraphQL operations that are too big before any
// upstream call is made: by tokens, depth, aliases, root fields, and by their
// estimated cost in upstream calls.
//
// The defaults follow the spirit of Apollo Router's documented examples
// (parser token limit 15 000, 30 aliases, 20 root fields), with a depth limit
// sized to the deepest real query of this schema plus GraphiQL's
// introspection query, and a cost budget that admits a 200-budget overview
// with metrics and actuals (1 + 200 + 200 calls) but not a 500-budget one.
package limits

import (
	"context"
	"fmt"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/lexer"
)

// Codes of the errors this package returns, in extensions.code.
const (
	CodeTokens     = "MAX_TOKENS_LIMIT"
	CodeDepth      = "MAX_DEPTH_LIMIT"
	CodeAliases    = "MAX_ALIASES_LIMIT"
	CodeRootFields = "MAX_ROOT_FIELDS_LIMIT"
	CodeCost       = "COST_ESTIMATED_TOO_EXPENSIVE"
)

// Config holds the limits. A zero field means no limit of that kind.
type Config struct {
	MaxTokens     int // lexical tokens of the query document
	MaxDepth      int // nesting of fields, fragments flattened
	MaxAliases    int // aliased fields
	MaxRootFields int // fields of the operation's root selection
	MaxCost       int // estimated upstream calls
}

// Defaults returns the default limits.
func Defaults() Config {
	return Config{MaxTokens: 15000, MaxDepth: 20, MaxAliases: 30, MaxRootFields: 20, MaxCost: 500}
}

var registerOnce sync.Once

// Extension enforces a Config as a gqlgen handler extension.
type Extension struct{ Config Config }

var (
	_ graphql.HandlerExtension          = Extension{}
	_ graphql.OperationParameterMutator = Extension{}
	_ graphql.OperationContextMutator   = Extension{}
)

// ExtensionName implements graphql.HandlerExtension.
func (Extension) ExtensionName() string { return "Limits" }

// Validate implements graphql.HandlerExtension. It registers the limit codes
// as request errors, so the transports answer them with the status the
// GraphQL-over-HTTP spec gives to invalid requests.
func (Extension) Validate(graphql.ExecutableSchema) error {
	registerOnce.Do(func() {
		for _, c := range []string{CodeTokens, CodeDepth, CodeAliases, CodeRootFields, CodeCost} {
			errcode.RegisterErrorType(c, errcode.KindProtocol)
		}
	})
	return nil
}

// MutateOperationParameters counts tokens before the query is parsed, so a
// huge document costs no more than this count.
func (e Extension) MutateOperationParameters(_ context.Context, p *graphql.RawParams) *gqlerror.Error {
	return CheckTokens(p.Query, e.Config.MaxTokens)
}

// MutateOperationContext checks the parsed and validated operation.
func (e Extension) MutateOperationContext(_ context.Context, rc *graphql.OperationContext) *gqlerror.Error {
	return Check(rc.Operation, rc.Variables, e.Config)
}

// CheckTokens fails when query has more than max lexical tokens (0: no limit).
func CheckTokens(query string, max int) *gqlerror.Error {
	if max <= 0 {
		return nil
	}
	lx := lexer.New(&ast.Source{Input: query})
	for n := 0; ; n++ {
		tok, err := lx.ReadToken()
		if err != nil || tok.Kind == lexer.EOF {
			return nil // a lexing error is the parser's to report
		}
		if n >= max {
			return limitError(CodeTokens, fmt.Sprintf("the query has more than %d tokens", max), nil)
		}
	}
}

// Check applies the structural limits and the cost budget to an operation.
func Check(op *ast.OperationDefinition, vars map[string]any, c Config) *gqlerror.Error {
	if op == nil {
		return nil
	}
	roots := flatten(op.SelectionSet)
	if c.MaxRootFields > 0 && len(roots) > c.MaxRootFields {
		return limitError(CodeRootFields, fmt.Sprintf("the operation has %d root fields; at most %d are allowed", len(roots), c.MaxRootFields), nil)
	}
	depth, aliases := shape(op.SelectionSet, 0, 0)
	if c.MaxDepth > 0 && depth > c.MaxDepth {
		return limitError(CodeDepth, fmt.Sprintf("the operation is %d fields deep; at most %d are allowed", depth, c.MaxDepth), nil)
	}
	if c.MaxAliases > 0 && aliases > c.MaxAliases {
		return limitError(CodeAliases, fmt.Sprintf("the operation has %d aliases; at most %d are allowed", aliases, c.MaxAliases), nil)
	}
	if c.MaxCost > 0 {
		if cost := Estimate(op, vars); cost > c.MaxCost {
			return limitError(CodeCost,
				fmt.Sprintf("the operation would make an estimated %d upstream calls; the budget is %d", cost, c.MaxCost),
				map[string]any{"estimatedCost": cost, "maxCost": c.MaxCost})
		}
	}
	return nil
}

func limitError(code, msg string, ext map[string]any) *gqlerror.Error {
	e := &gqlerror.Error{Message: msg, Extensions: map[string]any{"code": code}}
	for k, v := range ext {
		e.Extensions[k] = v
	}
	return e
}

// maxFragmentDepth bounds how deep fragment spreads are followed. Validation
// already refuses cycles; this only keeps a pathological document cheap.
const maxFragmentDepth = 64

// flatten returns the fields of a selection set with inline fragments and
// fragment spreads expanded.
func flatten(set ast.SelectionSet) []*ast.Field {
	var out []*ast.Field
	var walk func(ast.SelectionSet, int)
	walk = func(set ast.SelectionSet, depth int) {
		if depth > maxFragmentDepth {
			return
		}
		for _, sel := range set {
			switch s := sel.(type) {
			case *ast.Field:
				out = append(out, s)
			case *ast.InlineFragment:
				walk(s.SelectionSet, depth+1)
			case *ast.FragmentSpread:
				if s.Definition != nil {
					walk(s.Definition.SelectionSet, depth+1)
				}
			}
		}
	}
	walk(set, 0)
	return out
}

// shape returns the depth of the deepest field and the number of aliases.
func shape(set ast.SelectionSet, depth, guard int) (int, int) {
	if guard > maxFragmentDepth {
		return depth, 0
	}
	max, aliases := depth, 0
	for _, f := range flatten(set) {
		if f.Alias != "" && f.Alias != f.Name {
			aliases++
		}
		d, a := shape(f.SelectionSet, depth+1, guard+1)
		aliases += a
		if d > max {
			max = d
		}
	}
	return max, aliases
}
