// Package graph assembles the GraphQL endpoint: the generated executable
// schema, its transports and extensions, the error presenter, and the
// per-request middleware that carries the caller's key and loaders.
package graph

import (
	"net/http"
	"strings"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/costgw/gateway/graph/errs"
	"github.com/costgw/gateway/graph/generated"
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
}

// NewHandler returns the GraphQL endpoint. It is built with handler.New and
// explicit transports (GET, POST, OPTIONS), not NewDefaultServer, so nothing
// is on that was not chosen here.
func NewHandler(o Options) http.Handler {
	srv := handler.New(generated.NewExecutableSchema(generated.Config{
		Resolvers: &resolvers.Resolver{Client: o.Client, Cursors: relay.NewCodec(o.CursorSecret)},
	}))
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	if o.Introspection {
		srv.Use(extension.Introspection{})
	}
	srv.SetErrorPresenter(errs.Present)
	srv.SetRecoverFunc(errs.Recover)
	return WithAPIKey(loaders.Middleware(o.Client, o.Loaders, srv))
}

// WithAPIKey takes the caller's bearer key from the Authorization header and
// puts it in the request context, where the upstream client finds it. A
// request without one still runs: introspection and __typename need no key,
// and fields that need the upstream fail with UNAUTHENTICATED.
func WithAPIKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key, ok := bearer(r.Header.Get("Authorization")); ok {
			r = r.WithContext(upstream.WithAPIKey(r.Context(), key))
		}
		next.ServeHTTP(w, r)
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
