package executor

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/internal/answerbuf"
	"github.com/costgw/gateway/graph/internal/answerlimit"
	"github.com/costgw/gateway/graph/opmemo"
)

// Request is the executor's state of one request beyond gqlgen's: what the
// requests of its operation share (opmemo), its own cache of collected
// fields, and the count of its answer's values. The generated
// executionContext embeds it; Begin sets it up.
type Request struct {
	oc        *graphql.OperationContext
	memo      *opmemo.Memo
	collected collectedFields
	values    answerValues
}

// Begin sets r up for a request of the operation of oc.
func (r *Request) Begin(oc *graphql.OperationContext) {
	r.oc = oc
	r.memo = opmemo.For(oc.Operation)
	r.values.max = int64(answerlimit.Of(oc))
}

// answerValues counts the values of the answer as they are resolved, the
// fields of each object and the items of each list, against the operation's
// -max-answer-values (answerlimit; 0: none).
type answerValues struct {
	max   int64
	count atomic.Int64
	over  atomic.Bool
}

// Spend counts n more values of the answer, and reports whether the answer
// is still within -max-answer-values. Past it, what is left resolves to
// null at once (the generated code returns graphql.Null when Spend is
// false), and the answer is the limit's error alone (TooLarge); a
// mutation's outcome is not counted, since its writes are done by then.
func (r *Request) Spend(n int) bool {
	v := &r.values
	if v.max <= 0 || n == 0 { // nothing, such as an empty list, is within any bound
		return true
	}
	if v.over.Load() {
		return false
	}
	if v.count.Add(int64(n)) > v.max {
		v.over.Store(true)
		return false
	}
	return true
}

// SpendJSON counts a JSON scalar of n bytes: one value, and one more for
// each answerlimit.JSONBytes of its text, so that a large one is counted by
// its size.
func (r *Request) SpendJSON(n int) bool { return r.Spend(1 + n/answerlimit.JSONBytes) }

// OverValues reports whether the answer went past -max-answer-values.
func (r *Request) OverValues() bool { return r.values.over.Load() }

// TooLarge is the answer of a query whose answer went past
// -max-answer-values: the limit's error, without data; the errors of the
// fields left null on the way are dropped with them. A deferred part says
// where it belongs (path and label), and, when the operation deferred any,
// that it is the last.
func (r *Request) TooLarge(path ast.Path, label string, deferred bool) *graphql.Response {
	tl := &graphql.Response{Errors: gqlerror.List{answerlimit.Error(r.values.max)}, Path: path, Label: label}
	if deferred {
		tl.HasNext = new(bool)
	}
	return tl
}

// MutationTooLarge is the answer of a mutation whose answer went past
// -max-answer-values: what was resolved, with the limit's error saying its
// writes were made.
func (r *Request) MutationTooLarge(data []byte) *graphql.Response {
	return &graphql.Response{Data: data, Errors: gqlerror.List{answerlimit.MutationError(r.values.max)}}
}

// maxResponseHint bounds the buffer made ahead; a longer answer grows it.
const maxResponseHint = 4 << 20

// ResponseBuffer returns a buffer for an answer of the operation, the size
// of its last answer and an eighth: an answer of a document from the cache
// of parsed documents is written into a buffer of its size at once, not one
// doubled from 64 bytes, copied and collected a dozen times. The buffer is
// lent (answerbuf): the transport gives it back once the answer is written.
func (r *Request) ResponseBuffer() *bytes.Buffer {
	return answerbuf.Get(r.memo.SizeHint())
}

// KeepResponseSize keeps n, the length of an answer, as the size of the
// next when it is over the hint or under half of it.
func (r *Request) KeepResponseSize(n int) {
	if h := r.memo.SizeHint(); h > 0 && n <= h && n >= h/2 {
		return
	}
	r.memo.SetSizeHint(min(n+n/8, maxResponseHint))
}

// collectedFields caches graphql.CollectFields for one request of an
// operation that is not static (opmemo.Memo.Static), by the selection set
// and the object type's implementors, which are the same slices for every
// object resolved with them: a list of fifty budgets collects each selection
// once. gqlgen's own cache hashes the implementors' names for every object
// to make its key.
type collectedFields struct {
	mu sync.RWMutex
	m  map[collectedKey][]graphql.CollectedField
}

type collectedKey struct {
	sel       *ast.Selection
	n         int
	satisfies *string
}

// CollectFields is graphql.CollectFields(oc, sel, satisfies), cached for
// all the requests of a static operation, and for the request otherwise.
func (r *Request) CollectFields(sel ast.SelectionSet, satisfies []string) []graphql.CollectedField {
	if r.memo.Static {
		return r.memo.Fields(sel, satisfies, func() []graphql.CollectedField {
			return graphql.CollectFields(r.oc, sel, satisfies)
		})
	}
	if len(sel) == 0 || len(satisfies) == 0 {
		return graphql.CollectFields(r.oc, sel, satisfies)
	}
	k := collectedKey{sel: &sel[0], n: len(sel), satisfies: &satisfies[0]}
	c := &r.collected
	c.mu.RLock()
	fields, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return fields
	}
	fields = graphql.CollectFields(r.oc, sel, satisfies)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[collectedKey][]graphql.CollectedField)
	}
	c.m[k] = fields
	c.mu.Unlock()
	return fields
}
