package limits

import (
	"context"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/core"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/costgw/gateway/graph/codes"
)

// Documents is where the extension keeps the documents it has parsed and
// validated, by query text: gqlgen's query cache, which then skips its own
// parse and validation. Keep hands over a document that the cache may not
// keep for long (too large to cache) for this one request.
type Documents interface {
	graphql.Cache[*ast.QueryDocument]
	Keep(ctx context.Context, query string, doc *ast.QueryDocument)
}

// document parses and validates query for one request, with the cheap
// measures taken before each dearer step, so that no document costs more
// than its size allows:
//
//  1. tokens and the fields written, in one pass over the text (ScanText),
//     before anything is parsed or allocated: a document over -max-tokens,
//     or that writes more fields than MaxSelections (which it then selects
//     at least as often with its fragments expanded), is never parsed;
//  2. parsing (linear in the tokens), with the parser's own token limit as
//     a second guard;
//  3. the selections of each operation with its fragments expanded, counted
//     with each fragment visited once, and the pairs of fields that
//     validation's overlapping-fields rule would compare, which is quadratic
//     in the fields selected at one place: the document is refused before
//     validation when either is over MaxSelections;
//  4. validation, with gqlgen's rules.
//
// The request's deadline is checked between the steps.
func (e *Extension) document(ctx context.Context, query string) (*ast.QueryDocument, *gqlerror.Error) {
	text, lerr := checkText(query, e.Config)
	if lerr != nil {
		return nil, lerr
	}
	src := query
	if text.CommentBytes > maxCommentBytes {
		src = WithoutComments(query)
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: src}, e.Config.MaxTokens)
	if err != nil {
		ge, ok := err.(*gqlerror.Error)
		if !ok {
			ge = gqlerror.Wrap(err)
		}
		if e.Config.MaxTokens > 0 && strings.HasPrefix(ge.Message, "exceeded token limit") {
			return nil, tooManyTokens(e.Config.MaxTokens)
		}
		return nil, withCode(ge, codes.ParseFailed)
	}
	if len(doc.Operations) == 0 && len(doc.Fragments) == 0 {
		// The grammar asks for one definition at least (graphql-js:
		// "Syntax Error: Unexpected <EOF>").
		return nil, codes.Errorf(codes.ParseFailed, "the document is empty: it has no operation").GraphQL()
	}
	if len(doc.Operations) == 0 {
		return nil, codes.Errorf(codes.ValidationFailed, "no operation provided").GraphQL()
	}
	if err := deadline(ctx); err != nil {
		return nil, err
	}
	if err := CheckSelections(doc, e.Config.MaxSelections); err != nil {
		return nil, err
	}
	list := validator.ValidateWithRules(e.schema, doc, e.rules())
	if len(list) > 0 {
		// gqlgen reports every validation error; the first is enough to act
		// on, and the rest of a hostile document's would only add bytes.
		return nil, withCode(list[0], codes.ValidationFailed)
	}
	if err := deadline(ctx); err != nil {
		return nil, err
	}
	return doc, nil
}

// maxCommentBytes is the comment text above which a document is parsed
// without it (WithoutComments): gqlparser's lexer reads a comment rune by
// rune, several times slower than the scan that drops it.
const maxCommentBytes = 4 << 10

// rules are gqlgen's default validation rules, with the rules that suggest
// names ("Did you mean …?") swapped for their quiet forms when suggestions
// are off, and the schema's introspection fields refused when introspection
// is.
func (e *Extension) rules() *rules.Rules {
	r := rules.NewDefaultRules()
	if e.DisableSuggestion {
		for _, q := range quietRules {
			r.RemoveRule(q.suggesting.Name)
			r.AddRule(q.quiet.Name, q.quiet.RuleFunc)
		}
	}
	if e.DisableIntrospection {
		r.AddRule(noIntrospection.Name, noIntrospection.RuleFunc)
	}
	r.AddRule(intsFit.Name, intsFit.RuleFunc)
	r.AddRule(deferLabels.Name, deferLabels.RuleFunc)
	return r
}

// deferLabels holds @defer's labels to the incremental delivery RFC's rule
// (Defer And Stream Directive Labels Are Unique): each is a string written
// in the document, no two alike, so that a client can tell its parts apart.
var deferLabels = core.Rule{
	Name: "DeferLabelsAreUnique",
	RuleFunc: func(observers *core.Events, addError core.AddErrFunc) {
		// The walker visits a fragment's directives once for each
		// operation that spreads it and once more on its own: a label is
		// used twice when two directives carry it.
		first := map[string]*ast.Directive{}
		observers.OnDirective(func(_ *core.Walker, d *ast.Directive) {
			if d.Name != "defer" {
				return
			}
			label := d.Arguments.ForName("label")
			if label == nil || label.Value == nil {
				return
			}
			if label.Value.Kind != ast.StringValue && label.Value.Kind != ast.BlockValue {
				if first[""] != d { // once per directive
					first[""] = d
					addError(core.Message("the label of @defer must be a string written in the document"), core.At(label.Position))
				}
				return
			}
			switch f, ok := first[label.Value.Raw]; {
			case !ok:
				first[label.Value.Raw] = d
			case f != d:
				addError(core.Message("the @defer label %q is used twice: each must be unique", label.Value.Raw), core.At(label.Position))
			}
		})
	},
}

// intsFit refuses an Int written in the document (an argument, an input
// field, a list's item, a variable's default) that is not a 32-bit signed
// integer, as the spec's input coercion of Int does and graphql-js's
// ValuesOfCorrectTypeRule says; gqlparser's takes any integer, and gqlgen
// reads it into a Go int. checkVariables does the same for variables.
var intsFit = core.Rule{
	Name: "IntsFit",
	RuleFunc: func(observers *core.Events, addError core.AddErrFunc) {
		observers.OnValue(func(_ *core.Walker, v *ast.Value) {
			if v.Kind != ast.IntValue || v.ExpectedType == nil {
				return
			}
			t := v.ExpectedType
			for t.Elem != nil { // one value where a list is expected is a list of one
				t = t.Elem
			}
			if t.NamedType != "Int" {
				return
			}
			if _, err := strconv.ParseInt(v.Raw, 10, 32); err != nil {
				addError(core.Message("Int cannot represent non 32-bit signed integer value: %s", v.Raw), core.At(v.Position))
			}
		})
	},
}

// quietRules pairs each of gqlgen's rules whose errors can suggest a name
// of the schema with its form that does not.
var quietRules = []struct{ suggesting, quiet core.Rule }{
	{rules.FieldsOnCorrectTypeRule, rules.FieldsOnCorrectTypeRuleWithoutSuggestions},
	{rules.KnownArgumentNamesRule, rules.KnownArgumentNamesRuleWithoutSuggestions},
	{rules.KnownTypeNamesRule, rules.KnownTypeNamesRuleWithoutSuggestions},
	{rules.ScalarLeafsRule, rules.ScalarLeafsRuleWithoutSuggestions},
	{rules.ValuesOfCorrectTypeRule, rules.ValuesOfCorrectTypeRuleWithoutSuggestions},
}

// noIntrospection refuses the fields that read the schema (__schema,
// __type; __typename reads none), as graphql-js's
// NoSchemaIntrospectionCustomRule does: a request for them is a request
// error, not a field that fails.
var noIntrospection = core.Rule{
	Name: "NoSchemaIntrospection",
	RuleFunc: func(observers *core.Events, addError core.AddErrFunc) {
		observers.OnField(func(_ *core.Walker, f *ast.Field) {
			if f.Name == "__schema" || f.Name == "__type" {
				addError(core.Message(`introspection is turned off on this gateway: the field "%s" cannot be queried`, f.Name),
					core.At(f.Position))
			}
		})
	},
}

// deadline is the error of a request whose deadline has passed.
func deadline(ctx context.Context) *gqlerror.Error {
	if ctx.Err() == nil {
		return nil
	}
	return codes.Errorf(codes.RequestTimeout, "the request ran out of time before it was checked").GraphQL()
}

func withCode(e *gqlerror.Error, c codes.Code) *gqlerror.Error {
	if e.Extensions == nil {
		e.Extensions = map[string]any{}
	}
	e.Extensions["code"] = string(c)
	return e
}

// CheckSelections measures a parsed document before validation: the field
// selections of its operations with fragments expanded as the executor
// expands them (a fragment spread twice in one selection runs once), and
// the comparisons the overlapping-fields rule would make: the pairs of
// fields selected at the same response path, and of fragments spread in
// the same selection. Either over max (0: no limit) refuses the document.
// Fragments are counted once each and expanded only when the count is
// within max, so the work is linear in the document.
func CheckSelections(doc *ast.QueryDocument, max int) *gqlerror.Error {
	if max <= 0 {
		return nil
	}
	m := measure{doc: doc, memo: map[string]int{}}
	total := 0
	for _, op := range doc.Operations {
		total += m.count(op.SelectionSet)
		if total > max {
			return tooManySelections(max)
		}
	}
	for _, op := range doc.Operations {
		p := paths{doc: doc, ids: map[pathKey]int32{}, busy: map[string]bool{}}
		p.walk(op.SelectionSet, -1)
		if pairs := p.pairs(); pairs > 4*max {
			return codes.Errorf(codes.MaxSelections,
				"the operation selects the same fields at the same place too often (%d pairs to compare; at most %d)", pairs, 4*max).GraphQL()
		}
	}
	return nil
}

// measure counts selections with fragments expanded, each fragment once.
type measure struct {
	doc  *ast.QueryDocument
	memo map[string]int // -1 while a fragment is being counted (a cycle)
}

func (m *measure) count(set ast.SelectionSet) int {
	n := 0
	var spread map[string]bool
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			n = capAdd(n, 1+m.count(s.SelectionSet))
		case *ast.InlineFragment:
			n = capAdd(n, m.count(s.SelectionSet))
		case *ast.FragmentSpread:
			if spread[s.Name] {
				continue
			}
			if spread == nil {
				spread = map[string]bool{}
			}
			spread[s.Name] = true
			n = capAdd(n, m.fragment(s.Name))
		}
	}
	return n
}

func (m *measure) fragment(name string) int {
	if n, ok := m.memo[name]; ok {
		return max(n, 0)
	}
	def := m.doc.Fragments.ForName(name)
	if def == nil {
		return 0 // validation reports it
	}
	m.memo[name] = -1
	n := m.count(def.SelectionSet)
	m.memo[name] = n
	return n
}

// capAdd adds, saturating far above any limit.
func capAdd(a, b int) int {
	const most = 1 << 40
	return min(a+b, most)
}

// paths counts the fields at each response path of an operation, and the
// fragments spread together in each selection: what validation compares.
type paths struct {
	doc         *ast.QueryDocument
	ids         map[pathKey]int32
	counts      []int
	spreadPairs int
	busy        map[string]bool // fragments being expanded (a cycle is validation's to report)
}

type pathKey struct {
	parent int32
	name   string
}

func (p *paths) walk(set ast.SelectionSet, parent int32) {
	var spread map[string]bool
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			name := s.Alias
			if name == "" {
				name = s.Name
			}
			k := pathKey{parent, name}
			id, ok := p.ids[k]
			if !ok {
				id = int32(len(p.counts))
				p.ids[k] = id
				p.counts = append(p.counts, 0)
			}
			p.counts[id]++
			p.walk(s.SelectionSet, id)
		case *ast.InlineFragment:
			p.walk(s.SelectionSet, parent)
		case *ast.FragmentSpread:
			def := p.doc.Fragments.ForName(s.Name)
			if spread[s.Name] || def == nil || p.busy[s.Name] {
				continue
			}
			if spread == nil {
				spread = map[string]bool{}
			}
			spread[s.Name] = true
			p.busy[s.Name] = true
			p.walk(def.SelectionSet, parent)
			delete(p.busy, s.Name)
		}
	}
	p.spreadPairs = capAdd(p.spreadPairs, len(spread)*(len(spread)-1)/2)
}

// pairs is the number of comparisons: same-path fields, two by two, and
// fragments spread in one selection, two by two.
func (p *paths) pairs() int {
	n := p.spreadPairs
	for _, c := range p.counts {
		n = capAdd(n, c*(c-1)/2)
	}
	return n
}
