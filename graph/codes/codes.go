// Package codes is the one registry of the error codes the gateway puts in
// extensions.code, each with what it means and whether sending the same
// request again can help (as google.golang.org/grpc/codes does for gRPC),
// and the one writer of error bodies for requests that fail before GraphQL
// execution.
//
// docs/errors.md documents every code; a test keeps the two equal, and the
// GraphQL tests fail on any response carrying a code that is not here.
package codes

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Code is the value of an error's extensions.code.
type Code string

// The codes. Each has its Info in the registry below.
const (
	Unauthenticated     Code = "UNAUTHENTICATED"
	Forbidden           Code = "FORBIDDEN"
	NotFound            Code = "NOT_FOUND"
	BadUserInput        Code = "BAD_USER_INPUT"
	Conflict            Code = "CONFLICT"
	RateLimited         Code = "RATE_LIMITED"
	UpstreamUnavailable Code = "UPSTREAM_UNAVAILABLE"
	UpstreamBadResponse Code = "UPSTREAM_BAD_RESPONSE"
	Internal            Code = "INTERNAL"

	// gqlgen's own codes for documents that do not parse or validate.
	ParseFailed      Code = errcode.ParseFailed
	ValidationFailed Code = errcode.ValidationFailed

	// Limits, checked before any upstream call.
	MaxTokens        Code = "MAX_TOKENS_LIMIT"
	MaxDepth         Code = "MAX_DEPTH_LIMIT"
	MaxAliases       Code = "MAX_ALIASES_LIMIT"
	MaxRootFields    Code = "MAX_ROOT_FIELDS_LIMIT"
	MaxSelections    Code = "MAX_SELECTIONS_LIMIT"
	MaxIntrospection Code = "MAX_INTROSPECTION_LIMIT"
	MaxAnswerValues  Code = "MAX_ANSWER_VALUES_LIMIT"
	CostTooHigh      Code = "COST_ESTIMATED_TOO_EXPENSIVE"
	RequestTooLarge  Code = "REQUEST_TOO_LARGE"
	RequestTimeout   Code = "REQUEST_TIMEOUT"

	// Persisted queries and trusted documents.
	PersistedQueryNotFound  Code = "PERSISTED_QUERY_NOT_FOUND"
	PersistedQueryNotInList Code = "PERSISTED_QUERY_NOT_IN_LIST"

	// The HTTP request itself is not one the endpoint serves.
	BadRequest           Code = "BAD_REQUEST"
	MethodNotAllowed     Code = "METHOD_NOT_ALLOWED"
	UnsupportedMediaType Code = "UNSUPPORTED_MEDIA_TYPE"
)

// Retry says whether the same request can succeed if sent again.
type Retry int

const (
	// Never: the same request fails the same way; change it (or the key).
	Never Retry = iota
	// Later: the failure is passing; send the same request again after a
	// pause (backing off). A write sent again with the same idempotencyKey
	// applies at most once.
	Later
)

func (r Retry) String() string {
	if r == Later {
		return "yes, after a pause"
	}
	return "no"
}

// Info describes a code.
type Info struct {
	// Meaning is what the code says, for docs/errors.md.
	Meaning string
	// Retry says whether sending the same request again can help.
	Retry Retry
	// Request marks codes that fail a whole request before execution (no
	// data at all): the transports answer them with a 4xx status under
	// application/graphql-response+json, as the GraphQL-over-HTTP spec asks.
	Request bool
	// Caller marks codes that refuse a request through its caller's fault
	// alone, neither the upstream's nor the gateway's: the same request
	// fails the same way from any replica at any time. Admission paces a
	// caller often answered with such a code and no data
	// (-caller-refusals; Info.BlamesCaller in package graph).
	Caller bool
}

var registry = map[Code]Info{
	Unauthenticated:         {Meaning: "No API key was sent, or the upstream does not know the key.", Retry: Never, Caller: true},
	Forbidden:               {Meaning: "The key lacks a scope the operation needs, or the organization's plan has no API access.", Retry: Never, Caller: true},
	NotFound:                {Meaning: "The object does not exist, or belongs to another organization (the two are not told apart).", Retry: Never},
	BadUserInput:            {Meaning: "An argument is invalid: a malformed ID, cursor, date or value, variables nested deeper than any input (refused before they are decoded), or input the upstream refused.", Retry: Never, Caller: true},
	Conflict:                {Meaning: "The idempotencyKey was used before with a different input.", Retry: Never},
	RateLimited:             {Meaning: "The key (or all requests without a key, which share one allowance) is over the gateway's -rate-limit (HTTP 429, with Retry-After in seconds), or the caller's requests hold 16 MiB of bodies not yet decoded (429, once admitted, a refusal for pacing), or the upstream is throttling it.", Retry: Later},
	UpstreamUnavailable:     {Meaning: "The upstream failed, did not answer in time, or is paused by the circuit breaker; or the request ran out of time.", Retry: Later},
	UpstreamBadResponse:     {Meaning: "The upstream answered something the gateway cannot read exactly (a required member missing, a malformed body); the field is null rather than wrong.", Retry: Never},
	Internal:                {Meaning: "A fault in the gateway; the requestId extension finds it in the gateway's log.", Retry: Never},
	ParseFailed:             {Meaning: "The document is not GraphQL.", Retry: Never, Request: true, Caller: true},
	ValidationFailed:        {Meaning: "The document does not fit the schema, names no operation that exists, or its variables do not fit.", Retry: Never, Request: true, Caller: true},
	MaxTokens:               {Meaning: "The document has more lexical tokens than -max-tokens.", Retry: Never, Request: true, Caller: true},
	MaxDepth:                {Meaning: "The operation nests fields deeper than -max-depth.", Retry: Never, Request: true, Caller: true},
	MaxAliases:              {Meaning: "The operation has more aliased fields than -max-aliases.", Retry: Never, Request: true, Caller: true},
	MaxRootFields:           {Meaning: "The operation has more root fields than -max-root-fields.", Retry: Never, Request: true, Caller: true},
	MaxSelections:           {Meaning: "The document selects more fields than -max-selections with its fragments expanded, or selects the same fields at one place so often that checking them would cost more than that.", Retry: Never, Request: true, Caller: true},
	MaxIntrospection:        {Meaning: "The operation's introspection would write more values than 10 000, about twice a whole introspection of the schema; extensions estimatedValues and maxValues say by how much.", Retry: Never, Request: true, Caller: true},
	MaxAnswerValues:         {Meaning: "An answer would hold more values (the fields of its objects and the items of its lists) than -max-answer-values, counted as it is resolved: nothing of a query's answer is given (with @defer, the part that went past it carries this error and is the last); a mutation's writes are made, and its outcome (payloads, userErrors, idempotencyKey) is kept, with what they hold beyond it null. Extension maxValues says the bound.", Retry: Never, Request: true, Caller: true},
	CostTooHigh:             {Meaning: "The operation would make more upstream calls than -max-cost; extensions estimatedCost and maxCost say by how much.", Retry: Never, Request: true, Caller: true},
	RequestTooLarge:         {Meaning: "The request body is larger than -max-body-bytes (HTTP 413; without an API key the bound is 32 KB), a GET's query string larger than 32 KB (HTTP 414), or the Authorization header longer than a key can be (HTTP 431).", Retry: Never, Request: true, Caller: true},
	RequestTimeout:          {Meaning: "The request did not finish within -request-timeout before its answer could start, its body had not arrived by then, or it waited in line for its turn (-caller-in-flight, -requests-in-flight, or paced by -caller-refusals) until then (HTTP 504); nothing of it is answered.", Retry: Later, Request: true},
	PersistedQueryNotFound:  {Meaning: "The request names a persisted query or trusted document the gateway does not have: send the query with its hash to register it (automatic persisted queries), or check the document id.", Retry: Never},
	PersistedQueryNotInList: {Meaning: "The gateway runs only its trusted documents (-only-persisted), and the request's query is not one of them (HTTP 400).", Retry: Never, Request: true, Caller: true},
	BadRequest:              {Meaning: "The HTTP request is not a GraphQL request: its body is not one JSON object with a string query, its parameters have the wrong types, its persistedQuery extension is malformed or does not match its query, or it has two Authorization headers (HTTP 400, whatever the media type).", Retry: Never, Request: true, Caller: true},
	MethodNotAllowed:        {Meaning: "The endpoint takes GET (queries only) and POST; the Allow header says which fits (HTTP 405).", Retry: Never, Request: true, Caller: true},
	UnsupportedMediaType:    {Meaning: "A POST body that is not application/json, is in another charset than UTF-8, or has a Content-Encoding (HTTP 415, with Accept-Encoding: identity).", Retry: Never, Request: true, Caller: true},
}

var registerOnce sync.Once

// RegisterRequestCodes tells gqlgen's transports which codes fail a whole
// request, so that they answer them with the status the GraphQL-over-HTTP
// spec asks for. gqlgen keeps that table globally; the handler calls this.
func RegisterRequestCodes() {
	registerOnce.Do(func() {
		for c, info := range registry {
			if info.Request {
				errcode.RegisterErrorType(string(c), errcode.KindProtocol)
			}
		}
	})
}

// Info returns the description of c, and whether c is registered.
func (c Code) Info() (Info, bool) {
	i, ok := registry[c]
	return i, ok
}

// All returns every registered code, sorted.
func All() []Code {
	out := make([]Code, 0, len(registry))
	for c := range registry {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Error is an error the gateway finds itself, with its code and any extra
// extensions. The error presenter shows its message as it is.
type Error struct {
	Code       Code
	Message    string
	Extensions map[string]any
}

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return e.Message }

// With returns e with one more extension.
func (e *Error) With(key string, v any) *Error {
	if e.Extensions == nil {
		e.Extensions = map[string]any{}
	}
	e.Extensions[key] = v
	return e
}

// GraphQL returns e as a GraphQL error with extensions.code set.
func (e *Error) GraphQL() *gqlerror.Error {
	ext := make(map[string]any, len(e.Extensions)+1)
	for k, v := range e.Extensions {
		ext[k] = v
	}
	ext["code"] = string(e.Code)
	return &gqlerror.Error{Message: e.Message, Extensions: ext}
}

// Write answers a request that failed before GraphQL execution (body too
// large, a panic) with the GraphQL error shape and status. The media type is
// application/graphql-response+json when the client accepts it, and
// application/json otherwise; the body never echoes the request.
func Write(w http.ResponseWriter, r *http.Request, status int, errs ...*Error) {
	list := make([]*gqlerror.Error, len(errs))
	for i, e := range errs {
		list[i] = e.GraphQL()
	}
	body, err := json.Marshal(struct {
		Errors []*gqlerror.Error `json:"errors"`
	}{list})
	if err != nil {
		body = []byte(`{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL"}}]}`)
		status = http.StatusInternalServerError
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", MediaType(r))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// MediaType is the JSON media type to answer r with, by its Accept header
// and the q-values in it: the GraphQL response type when the header names it
// with a preference at least that of application/json, or when only a
// wildcard stands for it and application/json is refused (q=0);
// application/json otherwise, as the GraphQL-over-HTTP spec has a server do
// for a client that names neither, or prefers application/json.
func MediaType(r *http.Request) string {
	const graphQL, plain = "application/graphql-response+json", "application/json"
	if r == nil {
		return plain
	}
	g, j := acceptance{q: -1}, acceptance{q: -1}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q, ok := quality(params)
		if !ok {
			continue
		}
		g.match(mt, graphQL, q)
		j.match(mt, plain, q)
	}
	switch {
	case g.exact && g.q > 0 && g.q >= j.q:
		return graphQL
	case !g.exact && g.q > 0 && j.q == 0:
		return graphQL
	}
	return plain
}

// quality is the q of a media range's parameters, 1 by default; not ok
// when it is no number from 0 to 1.
func quality(params map[string]string) (q float64, ok bool) {
	v, set := params["q"]
	if !set {
		return 1, true
	}
	q, err := strconv.ParseFloat(v, 64)
	return q, err == nil && q >= 0 && q <= 1
}

// AcceptsExactly reports whether r's Accept header names the media type mt
// (in lower case) itself, no wildcard, with a q above 0. Media types are
// case-insensitive.
func AcceptsExactly(r *http.Request, mt string) bool {
	accept := strings.ToLower(r.Header.Get("Accept")) // no copy when it is in lower case already
	if !strings.Contains(accept, mt) {
		return false
	}
	for _, part := range strings.Split(accept, ",") {
		t, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || t != mt {
			continue
		}
		if q, ok := quality(params); ok && q > 0 {
			return true
		}
	}
	return false
}

// acceptance is how much an Accept header takes one media type: the q of
// its most specific range that matches (-1: none does), and whether that
// range names the type itself.
type acceptance struct {
	q           float64
	specificity int // 3 the type itself, 2 application/*, 1 */*
	exact       bool
}

func (a *acceptance) match(accepted, mt string, q float64) {
	spec := 0
	switch accepted {
	case mt:
		spec = 3
	case "application/*":
		spec = 2
	case "*/*":
		spec = 1
	}
	if spec > a.specificity {
		a.q, a.specificity, a.exact = q, spec, spec == 3
	}
}
