// Package graph assembles the GraphQL endpoint: the generated executable
// schema, its transports and extensions, the error presenter, and the
// per-request middleware that carries the caller's key and loaders.
package graph

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/generated"
	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/graph/resolvers"
	"github.com/costgw/gateway/internal/httpx"
	"github.com/costgw/gateway/upstream"
)

// Options configure the GraphQL endpoint.
type Options struct {
	// Client calls the upstream. Required.
	Client *upstream.Client
	// CursorSecret signs connection cursors. Empty means a random secret, so
	// cursors are valid for the life of the process only; set it to keep them
	// valid across restarts and replicas.
	CursorSecret []byte
	// Introspection enables __schema and __type queries.
	Introspection bool
	// Loaders tune the per-request dataloaders.
	Loaders loaders.Options
	// Limits bound every operation before any upstream call; nil means
	// limits.Defaults().
	Limits *limits.Config
	// MaxBodyBytes bounds a request body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// PersistedQueries stores the queries of automatic persisted queries,
	// by sha256 hash, once a request with a key has shown its query runs:
	// parsed, validated and within the limits; nil means an in-memory store
	// of 16 MB. Replicas that
	// share one (Redis) serve a hash any of them registered.
	PersistedQueries graphql.Cache[string]
	// TrustedDocuments are the documents a frontend build sends by id
	// (-persisted-documents); nil: none.
	TrustedDocuments Manifest
	// OnlyPersisted runs nothing but TrustedDocuments (-only-persisted),
	// and registers no automatic persisted query.
	OnlyPersisted bool
	// Logger receives the panics of resolvers; nil discards them.
	Logger *slog.Logger
	// OnPanic, when not nil, is told of every panic the endpoint recovers:
	// where is "resolver" or "loader". The server counts them.
	OnPanic func(where string)
	// OnCacheLookup, when not nil, is told whether each request's document
	// was in the cache of parsed documents.
	OnCacheLookup func(hit bool)
	// CallerInFlight is how many requests of one caller are worked on at
	// once (admission.go); more wait in line. 0: no bound but InFlight's.
	CallerInFlight int
	// InFlight is how many requests are worked on at once in all; more wait
	// in line, each caller in turn. 0: no bound but CallerInFlight's. What
	// it bounds is the memory and goroutines of work in flight: bodies,
	// decoded upstream answers and results being built
	// (docs/performance.md).
	InFlight int
	// CallerRefusals paces a caller who is refused often (admission.go):
	// past 2×CallerRefusals refused requests, one of its requests a
	// 1/CallerRefusals second is admitted. 0: never paced.
	CallerRefusals int
	// OnPaced, when not nil, is told of each caller that runs out of its
	// allowance of refusals and is paced: kind is keyless, unaccepted or
	// key (never which key). The endpoint also logs it.
	OnPaced func(kind string)
	// RequestTimeout is each request's deadline (0: none but the caller's
	// context's), set here and read by every later step from the request's
	// context: the body's read (readFirst), the wait for a place
	// (admission), the upstream calls, and the guard that answers 504 when
	// the answer has not started by then (guardDeadline).
	RequestTimeout time.Duration
	// Overdue, when not nil, counts the handlers running on after their
	// request was answered 504 REQUEST_TIMEOUT in their place: they end when
	// they notice their context has ended, and their client has its whole
	// answer, so a graceful shutdown need not wait for them (the server
	// passes its Load to internal/httpx's Serve).
	Overdue *atomic.Int64
}

// DefaultMaxBodyBytes is the default request body limit, 512 KiB. The
// largest request the schema takes is a createBudget or updateBudget whose
// four JSON inputs are each at their bound of 64 KB (model.MaxJSONBytes):
// 256 KiB and the document; 512 KiB holds that twice over, room for the
// escaping of values written in the document rather than in variables.
// Real requests are a few kilobytes. Every byte admitted costs the JSON
// decoder and then gqlparser's lexer (about 4 ns a byte for a string
// literal), so a larger bound (Apollo Router's 2 000 000) would let one
// request cost several milliseconds of CPU for nothing it can use.
const DefaultMaxBodyBytes = 512 << 10

// NewHandler returns the GraphQL endpoint. It is built with handler.New and
// explicit transports (GET, POST, OPTIONS), not NewDefaultServer, so nothing
// is on that was not chosen here.
func NewHandler(o Options) http.Handler {
	codes.RegisterRequestCodes()
	srv := handler.New(generated.NewExecutableSchema(generated.Config{
		Resolvers: &resolvers.Resolver{Client: o.Client, Cursors: relay.NewCodec(o.CursorSecret)},
	}))
	maxBody := o.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyBytes
	}
	tr := httpTransport{maxBody: maxBody}
	if o.TrustedDocuments != nil || o.OnlyPersisted {
		tr.trusted = newTrusted(o.TrustedDocuments, o.OnlyPersisted)
	}
	srv.AddTransport(tr)
	docs := newDocCache(docCacheBytes)
	srv.SetQueryCache(docs)
	if o.Introspection {
		srv.Use(extension.Introspection{})
	}
	// Suggestions ("Did you mean …?") reveal the schema; they go with introspection.
	srv.SetDisableSuggestion(!o.Introspection)
	lim := limits.Defaults()
	if o.Limits != nil {
		lim = *o.Limits
	}
	// Automatic persisted queries fill in the query of a hash before the
	// limits see it; with only trusted documents there are none.
	if !o.OnlyPersisted {
		store := o.PersistedQueries
		if store == nil {
			store = newAPQCache(apqCacheBytes)
		}
		srv.Use(newAPQ(store))
	}
	// The limits extension parses and validates every document not in the
	// cache itself, measuring it first; the parser's own token limit is a
	// second guard for a document gqlgen parses again.
	srv.Use(operationInfo{&limits.Extension{Config: lim, Documents: docs, DisableSuggestion: !o.Introspection,
		DisableIntrospection: !o.Introspection, OnLookup: o.OnCacheLookup}})
	if lim.MaxTokens > 0 {
		srv.SetParserTokenLimit(lim.MaxTokens + 1)
	}
	srv.AroundResponses(costExtension(lim.MaxCost))
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := presenter{log: log, onPanic: o.OnPanic}
	srv.SetErrorPresenter(p.present)
	srv.SetRecoverFunc(p.recover)
	lo := o.Loaders
	if lo.Logger == nil {
		lo.Logger = log
	}
	if lo.OnPanic == nil && o.OnPanic != nil {
		lo.OnPanic = func() { o.OnPanic("loader") }
	}
	overdue := o.Overdue
	if overdue == nil {
		overdue = new(atomic.Int64)
	}
	adm := newAdmission(o.CallerInFlight, o.InFlight, o.CallerRefusals)
	adm.onPaced = func(kind string) {
		log.Warn("a caller is paced: it was refused more than -caller-refusals times a second",
			"caller", kind, "caller_refusals", o.CallerRefusals)
		if o.OnPaced != nil {
			o.OnPaced(kind)
		}
	}
	// The body is read, by the request's deadline, before the request is
	// admitted: a place bounds work, not a client's I/O (readfirst.go).
	h := noStore(readFirst(maxBody, adm, guardDeadline(log, overdue, adm.admit(withCaller(loaders.Middleware(o.Client, lo, srv))))))
	if o.RequestTimeout > 0 {
		h = httpx.Deadline(o.RequestTimeout, h)
	}
	return h
}

// noStore marks every answer of the endpoint as one no cache may keep:
// Cache-Control: no-store, and Vary: Authorization for a cache that ignores
// it. An answer carries one organization's data, chosen by the bearer key,
// not by the URL, so a shared cache keyed by URL (a CDN caching the GET of an
// automatic persisted query's hash) would hand it to another organization;
// the answers without data (errors, introspection) gain little from a cache
// and are marked the same, so that no answer's headers depend on what it
// says. The headers are set before any other handler runs, so the answers
// written by admission, the deadline guard and the transport all carry them.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		MarkNoStore(w.Header())
		next.ServeHTTP(w, r)
	})
}

// MarkNoStore sets the headers of noStore in h, for an answer of the
// endpoint written before its handler runs (the server's rate limit).
func MarkNoStore(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Add("Vary", "Authorization")
}

// withCaller puts what identifies the caller into the request context: the
// bearer key of the Authorization header, where the upstream client finds
// it, the request id the server's middleware set on the response
// (X-Request-Id), which the error presenter adds to the gateway's own
// errors, and the request's Info when the server has not given it one. A request without a key still runs: introspection and __typename
// need none, and fields that need the upstream fail with UNAUTHENTICATED.
func withCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if key, ok := bearer(r.Header.Get("Authorization")); ok {
			ctx = upstream.WithAPIKey(ctx, key)
		}
		if id := w.Header().Get("X-Request-Id"); id != "" {
			ctx = context.WithValue(ctx, requestIDKey{}, id)
		}
		if InfoFrom(ctx) == nil {
			ctx, _ = WithInfo(ctx)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// BearerKey returns the caller's bearer key, as the endpoint reads it from
// the Authorization header.
func BearerKey(r *http.Request) (string, bool) { return bearer(r.Header.Get("Authorization")) }

// bearer returns the key of an "Authorization: Bearer <key>" header value.
func bearer(h string) (string, bool) {
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	key = strings.TrimSpace(key)
	return key, key != "" && !strings.ContainsAny(key, " \t\r\n")
}

// operationInfo is the limits extension that records the operation in its
// request's Info once the limits have checked it, refused or not: a
// document a limit refuses after it parsed is counted, logged and traced as
// the operation it is, with its estimate, not as one that did not parse.
type operationInfo struct{ *limits.Extension }

func (e operationInfo) MutateOperationContext(ctx context.Context, rc *graphql.OperationContext) *gqlerror.Error {
	err := e.Extension.MutateOperationContext(ctx, rc)
	if i := InfoFrom(ctx); i != nil {
		i.setOperation(rc)
	}
	return err
}
