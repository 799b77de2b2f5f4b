package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/upstream"
)

// Info is what the GraphQL endpoint learns of one request: its operation,
// the code it was answered with, and its estimated and actual upstream
// calls. The server's access log, metrics and traces read it once the
// request is answered; the response's extensions.cost carries the calls.
type Info struct {
	calls atomic.Int64

	mu        sync.Mutex
	name, typ string
	code      codes.Code
	estimated int
	answered  bool
	data      json.RawMessage // the data of an answer with errors, for BlamesCaller
	// callers is set for an answer whose code is not the caller's alone
	// in general but is here (a 429 for its caller's bodies): BlamesCaller.
	callers bool
}

type infoKey struct{}

// WithInfo returns a context carrying a new Info for a request, and the Info.
func WithInfo(ctx context.Context) (context.Context, *Info) {
	i := &Info{}
	return context.WithValue(ctx, infoKey{}, i), i
}

// InfoFrom returns the Info of the request ctx belongs to, or nil.
func InfoFrom(ctx context.Context) *Info {
	i, _ := ctx.Value(infoKey{}).(*Info)
	return i
}

// CountUpstreamCall counts one upstream call of the request ctx belongs to.
// Whatever sends the upstream client's calls (its observer, or its
// transport) calls it for every attempt.
func CountUpstreamCall(ctx context.Context) {
	if i := InfoFrom(ctx); i != nil {
		i.calls.Add(1)
	}
}

// UpstreamCalls is how many upstream calls the request has made so far.
func (i *Info) UpstreamCalls() int64 { return i.calls.Load() }

// Operation is the name ("" when anonymous) and type ("query", "mutation";
// "" before the document is read) of the request's operation.
func (i *Info) Operation() (name, typ string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.name, i.typ
}

// Outcome is the code the request was answered with: OK when the answer
// had no error, else the first error's extensions.code; "" when the GraphQL
// endpoint did not answer it.
func (i *Info) Outcome() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.answered {
		return ""
	}
	if i.code == "" {
		return "OK"
	}
	return string(i.code)
}

// EstimatedCalls is the operation's estimated upstream calls (0 before the
// limits ran).
func (i *Info) EstimatedCalls() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.estimated
}

func (i *Info) setOperation(oc *graphql.OperationContext) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.name = operationName(oc)
	if oc.Operation != nil {
		i.typ = string(oc.Operation.Operation)
	}
	i.estimated = limits.CostOf(oc).Estimated
}

// answer records the code of an answer: the first error's, or none; and,
// when it has errors, its data, for BlamesCaller.
func (i *Info) answer(list gqlerror.List, data json.RawMessage) {
	if i == nil {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.answered {
		return // a later part of an incremental answer
	}
	i.answered = true
	if len(list) > 0 {
		c, _ := list[0].Extensions["code"].(string)
		i.code = codes.Code(c)
		i.data = data
	}
}

// hasRootValue reports whether data (a response's data member) is an
// object with a member that is not null. It reads the top level only.
func hasRootValue(data json.RawMessage) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for dec.PeekKind() == '"' {
		if _, err := dec.ReadToken(); err != nil {
			return false
		}
		if dec.PeekKind() != 'n' {
			return true
		}
		if err := dec.SkipValue(); err != nil {
			return false
		}
	}
	return false
}

// BlamesCaller reports whether the request was refused through its caller's
// fault alone: answered with a code that blames the caller
// (codes.Info.Caller) and without any data. An answer with data and an
// error on some field (a scope the key lacks, an invalid argument deep in
// the query) is not a refusal: the caller got something.
func (i *Info) BlamesCaller() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	c, _ := i.code.Info()
	return i.answered && (c.Caller || i.callers) && !hasRootValue(i.data)
}

// blameCaller records that the request is refused through its caller's
// fault alone, whatever its code says in general.
func (i *Info) blameCaller() {
	if i == nil {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.callers = true
}

// AnsweredWith records that the request was answered with the code c
// without the executor: by the transport, or before the GraphQL endpoint
// saw it (the server's rate limit). The first answer recorded stands.
func (i *Info) AnsweredWith(c codes.Code) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.answered {
		i.answered, i.code = true, c
	}
}

// overrule records c as the request's outcome whatever was recorded
// before: the deadline guard's 504, sent in place of an answer the executor
// had finished but the handler had not yet written.
func (i *Info) overrule(c codes.Code) {
	if i == nil {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.answered, i.code, i.data = true, c, nil
}

// operationName is the name of the operation oc runs, "" when anonymous,
// as logs and spans show it (limits.ShownName).
func operationName(oc *graphql.OperationContext) string {
	if oc.OperationName == "" && oc.Operation != nil {
		return limits.ShownName(oc.Operation.Name)
	}
	return limits.ShownName(oc.OperationName)
}

// costExtension adds to every response what the operation costs, as GitHub's
// rateLimit does in data: the upstream calls estimated before any was made,
// the calls made, and the limit on the estimate (-max-cost; null when off).
// maxCost is -max-cost (0: none), which every answer states, those refused
// before the limits ran included.
func costExtension(maxCost int) graphql.ResponseMiddleware {
	return func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		resp := next(ctx)
		if resp == nil || !graphql.HasOperationContext(ctx) {
			return resp
		}
		ci := costInfo{estimated: limits.CostOf(graphql.GetOperationContext(ctx)).Estimated, max: maxCost}
		if i := InfoFrom(ctx); i != nil {
			ci.calls = i.UpstreamCalls()
		}
		if resp.Extensions == nil {
			resp.Extensions = map[string]any{}
		}
		resp.Extensions["cost"] = ci
		if cs := upstream.CacheStatsFrom(ctx); cs != nil {
			resp.Extensions["cache"] = cacheInfo{hits: cs.Hits(), misses: cs.Misses(),
				age: int64(cs.Age(time.Now()) / time.Second), stale: cs.Stale()}
		}
		return resp
	}
}

// cacheInfo is the cache extension of an answer: its upstream reads
// answered from the cache and sent, the age in whole seconds of the oldest
// data served from the cache, and whether any was stale (docs/caching.md).
type cacheInfo struct {
	hits, misses, age int64
	stale             bool
}

// appendJSON appends c as JSON.
func (c cacheInfo) appendJSON(b []byte) []byte {
	b = strconv.AppendInt(append(b, `{"hits":`...), c.hits, 10)
	b = strconv.AppendInt(append(b, `,"misses":`...), c.misses, 10)
	b = strconv.AppendInt(append(b, `,"ageSeconds":`...), c.age, 10)
	b = strconv.AppendBool(append(b, `,"stale":`...), c.stale)
	return append(b, '}')
}

// MarshalJSON writes c for any other encoder of the answer.
func (c cacheInfo) MarshalJSON() ([]byte, error) { return c.appendJSON(nil), nil }

// costInfo is the cost extension of an answer: the upstream calls the
// operation was estimated at, made, and allowed (null: no bound).
type costInfo struct {
	estimated, max int
	calls          int64
}

// appendJSON appends c as JSON, its members in the order encoding/json
// gives a map's: writeResponse writes it so, without reflection.
func (c costInfo) appendJSON(b []byte) []byte {
	b = strconv.AppendInt(append(b, `{"estimatedUpstreamCalls":`...), int64(c.estimated), 10)
	b = append(b, `,"maxUpstreamCalls":`...)
	if c.max > 0 {
		b = strconv.AppendInt(b, int64(c.max), 10)
	} else {
		b = append(b, "null"...)
	}
	b = strconv.AppendInt(append(b, `,"upstreamCalls":`...), c.calls, 10)
	return append(b, '}')
}

// MarshalJSON writes c for any other encoder of the answer.
func (c costInfo) MarshalJSON() ([]byte, error) { return c.appendJSON(nil), nil }
