// Package resolvers holds the gateway's GraphQL resolvers: thin translations
// of arguments into upstream calls or loader loads, and of upstream records
// into models. Helpers live in the files without the .resolvers.go suffix.
package resolvers

import (
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream"
)

// Resolver is the root resolver. It holds only long-lived dependencies; all
// per-request state (the caller's key, the loaders) travels in the context.
type Resolver struct {
	Client  *upstream.Client
	Cursors *relay.Codec
}
