// Package limits rejects GraphQL operations that are too big before any
// upstream call is made: by tokens, depth, aliases, root fields, and by their
// estimated cost in upstream calls.
//
// The defaults follow the spirit of Apollo Router's documented examples
// (parser token limit 15 000, 30 aliases, 20 root fields), with a depth limit
// sized to the deepest real query of this schema plus GraphiQL's
// introspection query, and a cost limit that admits a 200-budget overview
// with metrics and actuals (1 + 200 + 200 calls) but not a 500-budget one.
// What each field costs is the table of package cost.
package limits

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/cost"
	"github.com/costgw/gateway/graph/internal/answerlimit"
)

// Config holds the limits. A zero field means no limit of that kind.
type Config struct {
	MaxTokens     int // lexical tokens of the query document
	MaxSelections int // field selections with fragments expanded, and the comparisons validation makes of them
	MaxDepth      int // nesting of fields, fragments flattened
	MaxAliases    int // aliased fields
	MaxRootFields int // fields of the operation's root selection
	MaxCost       int // estimated upstream calls
	// MaxAnswerValues bounds the values of an answer, counted as they are
	// resolved: the fields of each object and the items of each list. It is
	// the one limit that data, not the document, decides: the upstream's
	// answers are of any size, and an alias writes one again.
	MaxAnswerValues int
}

// Defaults returns the default limits.
func Defaults() Config {
	return Config{MaxTokens: 15000, MaxSelections: 2000, MaxDepth: 20, MaxAliases: 30, MaxRootFields: 20, MaxCost: 500,
		MaxAnswerValues: DefaultMaxAnswerValues}
}

// Extension enforces a Config as a gqlgen handler extension. It parses and
// validates each document itself, measuring it before each dearer step, and
// keeps the result in Documents, gqlgen's query cache, where the executor
// finds it; a document already there is neither measured nor parsed again.
type Extension struct {
	Config Config
	// Documents is the executor's query cache. Required.
	Documents Documents
	// DisableSuggestion leaves "Did you mean …?" out of validation errors,
	// as gqlgen's executor's setting of the same name.
	DisableSuggestion bool
	// DisableIntrospection refuses __schema and __type in validation
	// (GRAPHQL_VALIDATION_FAILED), for a gateway that serves no
	// introspection.
	DisableIntrospection bool
	// OnLookup, when not nil, is told whether each request's document was
	// in Documents.
	OnLookup func(hit bool)

	schema *ast.Schema
	counts *cost.IntrospectionCounts // what introspection of schema answers
}

var (
	_ graphql.HandlerExtension          = (*Extension)(nil)
	_ graphql.OperationParameterMutator = (*Extension)(nil)
	_ graphql.OperationContextMutator   = (*Extension)(nil)
)

// ExtensionName implements graphql.HandlerExtension.
func (*Extension) ExtensionName() string { return "Limits" }

// Validate implements graphql.HandlerExtension.
func (e *Extension) Validate(es graphql.ExecutableSchema) error {
	if e.Documents == nil {
		return errors.New("limits: Extension.Documents is nil")
	}
	e.schema = es.Schema()
	e.counts = cost.NewIntrospectionCounts(e.schema)
	return nil
}

// MutateOperationParameters parses and validates a document the cache does
// not have, within the limits that bound that work.
func (e *Extension) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	doc, hit := e.Documents.Get(ctx, p.Query)
	if e.OnLookup != nil {
		e.OnLookup(hit)
	}
	if !hit {
		var err *gqlerror.Error
		if doc, err = e.document(ctx, p.Query); err != nil {
			return err
		}
		e.Documents.Keep(ctx, p.Query, doc)
	}
	if err := chosenOperation(doc, p.OperationName); err != nil {
		return err
	}
	return checkVariables(e.schema, doc.Operations.ForName(p.OperationName), p.Variables)
}

// chosenOperation says why operationName picks no operation of doc, in
// words a client can act on (gqlgen's own says "operation  not found").
func chosenOperation(doc *ast.QueryDocument, name string) *gqlerror.Error {
	switch {
	case name == "" && len(doc.Operations) > 1:
		return codes.Errorf(codes.ValidationFailed,
			"the document has %d operations: name the one to run in operationName", len(doc.Operations)).GraphQL()
	case name != "" && doc.Operations.ForName(name) == nil:
		return codes.Errorf(codes.ValidationFailed, "the document has no operation named %q", ShownName(name)).GraphQL()
	}
	return nil
}

// MaxShownName bounds an operation's name as errors, logs and spans show
// it. A name is as long as the document allows, and one of 400 KB was
// repeated in its error and in an access line of each request.
const MaxShownName = 128

// ShownName is name as errors, logs and spans show it: the first
// MaxShownName bytes (whole characters) and "…" when it is longer.
func ShownName(name string) string {
	if len(name) <= MaxShownName {
		return name
	}
	cut := MaxShownName
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "…"
}

// MutateOperationContext checks the parsed and validated operation, and
// keeps its estimated cost in the operation's stats (CostOf).
func (e *Extension) MutateOperationContext(_ context.Context, rc *graphql.OperationContext) *gqlerror.Error {
	s, err := check(rc.Operation, rc.Variables, e.Config)
	rc.Stats.SetExtension(costStats, Cost{Estimated: s.Calls, Max: e.Config.MaxCost})
	answerlimit.Set(rc, e.Config.MaxAnswerValues)
	if err != nil {
		return err
	}
	return CheckIntrospection(rc.Operation, e.counts)
}

// MaxIntrospectionValues bounds the values an operation's introspection is
// estimated to write (cost.IntrospectionValues). The largest introspection
// query a tool sends (graphql-js's getIntrospectionQuery with every option
// on, which GraphiQL, graphql-codegen and relay-compiler send) writes 4 897
// values, 114 KB, on this schema; the bound is twice that, rounded, so the
// schema can grow before a test (TestIntrospectionLimitAdmitsTools) says to
// look again. It is not a flag: it follows the schema, which is the
// build's, not the deployment's, and it holds with or without a key, since
// introspection is free in upstream calls and so no other limit bounds it.
const MaxIntrospectionValues = 10_000

// CheckIntrospection refuses an operation whose introspection answer is
// estimated to write more than MaxIntrospectionValues values on the schema
// counted in s (MAX_INTROSPECTION_LIMIT, stating the estimate). A keyless
// request may run nothing but introspection, and 30 aliases of
// __schema { types { … } } once answered 3 MB for 110 ms of CPU.
func CheckIntrospection(op *ast.OperationDefinition, s *cost.IntrospectionCounts) *gqlerror.Error {
	if v := cost.IntrospectionValues(op, s); v > MaxIntrospectionValues {
		return codes.Errorf(codes.MaxIntrospection,
			"the operation's introspection would write an estimated %d values; at most %d are allowed, about twice a whole introspection of the schema",
			v, MaxIntrospectionValues).
			With("estimatedValues", v).With("maxValues", MaxIntrospectionValues).GraphQL()
	}
	return nil
}

// costStats names the operation stats the extension keeps.
const costStats = "costgw.cost"

// Cost is an operation's estimated upstream calls and the limit on them.
type Cost struct {
	Estimated int // estimated upstream calls
	Max       int // -max-cost; 0: no limit
}

// DefaultMaxAnswerValues is -max-answer-values by default.
const DefaultMaxAnswerValues = 100_000

// CostOf returns the cost the extension estimated for the operation of oc,
// zero when it has not.
func CostOf(oc *graphql.OperationContext) Cost {
	if oc == nil {
		return Cost{}
	}
	c, _ := oc.Stats.GetExtension(costStats).(Cost)
	return c
}

// CheckTokens fails when query has more than max lexical tokens (0: no limit).
func CheckTokens(query string, max int) *gqlerror.Error {
	if max > 0 && ScanText(query, max).Tokens > max {
		return tooManyTokens(max)
	}
	return nil
}

// checkText applies the limits that the text alone measures (ScanText):
// tokens first, then the fields written.
func checkText(query string, c Config) (TextMeasure, *gqlerror.Error) {
	t := ScanText(query, c.MaxTokens)
	if c.MaxTokens > 0 && t.Tokens > c.MaxTokens {
		return t, tooManyTokens(c.MaxTokens)
	}
	if c.MaxSelections > 0 && t.Fields > c.MaxSelections {
		return t, tooManySelections(c.MaxSelections)
	}
	return t, nil
}

func tooManyTokens(max int) *gqlerror.Error {
	return limitError(codes.MaxTokens, "the query has more than %d tokens", max)
}

func tooManySelections(max int) *gqlerror.Error {
	return codes.Errorf(codes.MaxSelections, "the document selects more than %d fields with its fragments expanded", max).GraphQL()
}

// Check applies the structural limits and the cost limit to an operation.
// Its work is linear in the document (cost.Estimate).
func Check(op *ast.OperationDefinition, vars map[string]any, c Config) *gqlerror.Error {
	_, err := check(op, vars, c)
	return err
}

func check(op *ast.OperationDefinition, vars map[string]any, c Config) (cost.Summary, *gqlerror.Error) {
	if op == nil {
		return cost.Summary{}, nil
	}
	s := cost.EstimateOnce(op, vars)
	return s, checkSummary(s, c)
}

func checkSummary(s cost.Summary, c Config) *gqlerror.Error {
	switch {
	case c.MaxRootFields > 0 && s.RootFields > c.MaxRootFields:
		return limitError(codes.MaxRootFields, "the operation has %d root fields; at most %d are allowed", s.RootFields, c.MaxRootFields)
	case c.MaxDepth > 0 && s.Depth > c.MaxDepth:
		return limitError(codes.MaxDepth, "the operation is %d fields deep; at most %d are allowed", s.Depth, c.MaxDepth)
	case c.MaxAliases > 0 && s.Aliases > c.MaxAliases:
		return limitError(codes.MaxAliases, "the operation has %d aliases; at most %d are allowed", s.Aliases, c.MaxAliases)
	case c.MaxCost > 0 && s.Calls > c.MaxCost:
		return codes.Errorf(codes.CostTooHigh, "the operation would make an estimated %d upstream calls; at most %d are allowed (-max-cost)", s.Calls, c.MaxCost).
			With("estimatedCost", s.Calls).With("maxCost", c.MaxCost).GraphQL()
	}
	return nil
}

func limitError(code codes.Code, format string, args ...any) *gqlerror.Error {
	return codes.Errorf(code, format, args...).GraphQL()
}
