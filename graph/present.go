package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream"
)

// presenter turns every error a resolver returns into a GraphQL error with a
// registered extensions.code, in one place. An upstream error adds
// upstreamCode, requestId and status (and idempotencyKey for a write), never
// the upstream URL, a header or a raw body.
type presenter struct {
	log     *slog.Logger
	onPanic func(where string)
}

// present is the gqlgen error presenter.
func (p presenter) present(ctx context.Context, err error) *gqlerror.Error {
	var gqlErr *gqlerror.Error
	if errors.As(err, &gqlErr) && gqlErr.Err == nil {
		// Parse and validation errors made by gqlgen itself, and the limits'
		// errors: already typed.
		return gqlErr
	}
	e := graphql.DefaultErrorPresenter(ctx, err)
	if e.Extensions == nil {
		e.Extensions = map[string]any{}
	}
	argumentPath(ctx, e)
	ce := classify(err)
	e.Message = ce.Message
	e.Extensions["code"] = string(ce.Code)
	for k, v := range ce.Extensions {
		e.Extensions[k] = v
	}
	if _, ok := e.Extensions["requestId"]; !ok {
		// Errors of the gateway's own (INTERNAL above all) name the gateway's
		// request id, which its logs carry, so an operator can find them.
		if id := requestID(ctx); id != "" {
			e.Extensions["requestId"] = id
		}
	}
	return e
}

// argumentPath moves the part of e's path that names an argument of the
// field (gqlgen goes on into the argument when its value does not coerce:
// "budgetLookback", "input", "startDate") to extensions.argumentPath: an
// error's path is a path of the answer, field names and list indices
// (GraphQL spec, "Errors"), and the field is where the error is.
func argumentPath(ctx context.Context, e *gqlerror.Error) {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil {
		return
	}
	at := fc.Path()
	if len(e.Path) <= len(at) {
		return
	}
	if _, named := e.Path[len(at)].(ast.PathName); !named {
		return // a list's item, which the answer has
	}
	for i := range at {
		if e.Path[i] != at[i] {
			return
		}
	}
	e.Extensions["argumentPath"] = pathValues(e.Path[len(at):])
	e.Path = at
}

// pathValues is p as JSON has it: names as strings, indices as numbers.
func pathValues(p ast.Path) []any {
	out := make([]any, len(p))
	for i, el := range p {
		switch el := el.(type) {
		case ast.PathName:
			out[i] = string(el)
		case ast.PathIndex:
			out[i] = int(el)
		}
	}
	return out
}

// recover is the gqlgen recover function: a panic in a resolver or in the
// executor is logged once, with its stack and the operation's name, and
// becomes INTERNAL without its value or stack reaching the caller.
func (p presenter) recover(ctx context.Context, v any) error {
	op := ""
	if graphql.HasOperationContext(ctx) { // not before the operation is made (gqlgen's server recovers there too)
		op = operationName(graphql.GetOperationContext(ctx))
	}
	if p.onPanic != nil {
		p.onPanic("resolver")
	}
	p.log.LogAttrs(ctx, slog.LevelError, "panic in a resolver",
		slog.String("request_id", requestID(ctx)),
		slog.String("operation", op),
		slog.String("panic", fmt.Sprint(v)),
		slog.String("stack", string(debug.Stack())))
	return fmt.Errorf("panic in resolver: %v", v)
}

type requestIDKey struct{}

// requestID returns the gateway's id of the request, if any.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// classify returns the code, the public message and the extra extensions of err.
func classify(err error) *codes.Error {
	var ce *codes.Error
	if errors.As(err, &ce) {
		return ce
	}
	if errors.Is(err, relay.ErrInvalidID) || errors.Is(err, relay.ErrInvalidCursor) {
		return &codes.Error{Code: codes.BadUserInput, Message: rootMessage(err)}
	}
	if errors.Is(err, upstream.ErrNoAPIKey) {
		return &codes.Error{Code: codes.Unauthenticated, Message: "an API key is required in the Authorization header"}
	}
	var ue *upstream.Error
	if errors.As(err, &ue) && ue.Status == 0 && (errors.Is(ue, upstream.ErrInvalidRequest) || errors.Is(ue, upstream.ErrUnauthorized)) {
		// The client refused to send it (an id it cannot put in a path, a
		// key it cannot put in a header): nothing of the upstream's to show.
		code, msg := upstreamCode(ue)
		return &codes.Error{Code: code, Message: msg}
	}
	if errors.As(err, &ue) {
		ext := map[string]any{"upstreamCode": ue.Code, "status": ue.Status}
		if ue.RequestID != "" {
			ext["requestId"] = ue.RequestID
		}
		if ue.IdempotencyKey != "" {
			ext["idempotencyKey"] = ue.IdempotencyKey
		}
		if ue.Temporary() || errors.Is(ue, upstream.ErrUnavailable) {
			// The same request may succeed later; for a write, sent again
			// with idempotencyKey it applies at most once.
			ext["retryable"] = true
		}
		if ue.Status == 0 {
			delete(ext, "status")
		}
		code, msg := upstreamCode(ue)
		return &codes.Error{Code: code, Message: msg, Extensions: ext}
	}
	if errors.Is(err, upstream.ErrBadResponse) {
		// Read from an answer after the client had it (an Explorer
		// history row whose columns are not as the answer says).
		return &codes.Error{Code: codes.UpstreamBadResponse, Message: "the upstream sent an answer the gateway could not read exactly"}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &codes.Error{Code: codes.UpstreamUnavailable, Message: "the request ran out of time"}
	}
	return &codes.Error{Code: codes.Internal, Message: "internal error"}
}

// upstreamCode maps an upstream error to a code and a message fit to show.
// Messages of 4xx answers are the upstream's own words to the caller; of
// failures on its side they are ours, since they may describe internals.
func upstreamCode(ue *upstream.Error) (codes.Code, string) {
	switch {
	case errors.Is(ue, upstream.ErrUnauthorized):
		return codes.Unauthenticated, ue.Message
	case errors.Is(ue, upstream.ErrForbidden):
		return codes.Forbidden, ue.Message
	case errors.Is(ue, upstream.ErrNotFound):
		return codes.NotFound, ue.Message
	case errors.Is(ue, upstream.ErrConflict):
		return codes.Conflict, ue.Message
	case errors.Is(ue, upstream.ErrRateLimited):
		return codes.RateLimited, "the upstream is throttling requests; retry later"
	case errors.Is(ue, upstream.ErrInvalidRequest):
		return codes.BadUserInput, ue.Message
	case errors.Is(ue, upstream.ErrBadResponse):
		return codes.UpstreamBadResponse, "the upstream sent an answer the gateway could not read exactly"
	case errors.Is(ue, context.DeadlineExceeded), errors.Is(ue, context.Canceled):
		return codes.UpstreamUnavailable, "the upstream did not answer in time"
	case errors.Is(ue, upstream.ErrUnavailable):
		return codes.UpstreamUnavailable, "the upstream is unavailable; retry later"
	}
	return codes.Internal, "internal error"
}

// rootMessage is the message of the innermost error that says what is
// wrong, without the path prefixes resolvers add.
func rootMessage(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil || u == relay.ErrInvalidID || u == relay.ErrInvalidCursor {
			return err.Error()
		}
		err = u
	}
}
