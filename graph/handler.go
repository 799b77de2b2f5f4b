// Package graph assembles the GraphQL endpoint: the generated executable
// schema, its transports and extensions, the error presenter, and the
// per-request middleware that carries the caller's key and loaders.
package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/costgw/gateway/graph/errs"
	"github.com/costgw/gateway/graph/generated"
	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/graph/resolvers"
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
	// OnOperation, when not nil, is called with the name of each operation
	// the endpoint runs (empty for an anonymous one), after it is parsed and
	// validated and before it runs. The server names operations in its access
	// log with it.
	OnOperation func(ctx context.Context, name string)
}

// DefaultMaxBodyBytes is the default request body limit (Apollo Router's default).
const DefaultMaxBodyBytes = 2_000_000

// NewHandler returns the GraphQL endpoint. It is built with handler.New and
// explicit transports (GET, POST, OPTIONS), not NewDefaultServer, so nothing
// is on that was not chosen here.
func NewHandler(o Options) http.Handler {
	srv := handler.New(generated.NewExecutableSchema(generated.Config{
		Resolvers: &resolvers.Resolver{Client: o.Client, Cursors: relay.NewCodec(o.CursorSecret)},
	}))
	srv.AddTransport(transport.Options{})
	srv.AddTransport(overHTTP{transport.GET{}})
	srv.AddTransport(overHTTP{transport.POST{}})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	if o.Introspection {
		srv.Use(extension.Introspection{})
	}
	// Suggestions ("Did you mean …?") reveal the schema; they go with introspection.
	srv.SetDisableSuggestion(!o.Introspection)
	lim := limits.Defaults()
	if o.Limits != nil {
		lim = *o.Limits
	}
	srv.Use(limits.Extension{Config: lim})
	// Defence in depth: the extension counts tokens first, the parser stops too.
	if lim.MaxTokens > 0 {
		srv.SetParserTokenLimit(lim.MaxTokens + 1)
	}
	if o.OnOperation != nil {
		srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
			name := ""
			if oc := graphql.GetOperationContext(ctx); oc != nil {
				name = oc.OperationName
				if name == "" && oc.Operation != nil {
					name = oc.Operation.Name
				}
			}
			o.OnOperation(ctx, name)
			return next(ctx)
		})
	}
	srv.SetErrorPresenter(errs.Present)
	srv.SetRecoverFunc(errs.Recover)
	maxBody := o.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyBytes
	}
	return limitBody(maxBody, WithAPIKey(loaders.Middleware(o.Client, o.Loaders, srv)))
}

// CodeRequestTooLarge is the extensions.code of a body over the limit.
const CodeRequestTooLarge = "REQUEST_TOO_LARGE"

// limitBody answers 413 to a body over max bytes, before anything reads it.
func limitBody(max int64, next http.Handler) http.Handler {
	tooLarge := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		fmt.Fprintf(w, `{"errors":[{"message":"the request body is larger than %d bytes","extensions":{"code":%q}}]}`, max, CodeRequestTooLarge)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			tooLarge(w)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				tooLarge(w)
				return
			}
			if err != nil {
				http.Error(w, "could not read the request body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

// WithAPIKey takes the caller's bearer key from the Authorization header and
// puts it in the request context, where the upstream client finds it. A
// request without one still runs: introspection and __typename need no key,
// and fields that need the upstream fail with UNAUTHENTICATED.
//
// It also hands the request id that the server's middleware set on the
// response (X-Request-Id) to the error presenter.
func WithAPIKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if key, ok := bearer(r.Header.Get("Authorization")); ok {
			ctx = upstream.WithAPIKey(ctx, key)
		}
		if id := w.Header().Get("X-Request-Id"); id != "" {
			ctx = errs.WithRequestID(ctx, id)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// bearer returns the key of an "Authorization: Bearer <key>" header value.
func bearer(h string) (string, bool) {
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	key = strings.TrimSpace(key)
	return key, key != "" && !strings.ContainsAny(key, " \t\r\n")
}
