// Package errs turns every error a resolver returns into a GraphQL error with
// a typed extensions.code, in one place: the error presenter.
//
// The codes: UNAUTHENTICATED, FORBIDDEN, NOT_FOUND, BAD_USER_INPUT, CONFLICT,
// RATE_LIMITED, UPSTREAM_UNAVAILABLE and INTERNAL. An upstream error adds
// upstreamCode, requestId and status (and idempotencyKey for a write), never
// the upstream URL, a header or a raw body.
package errs

import (
	"context"
	"errors"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream"
)

// Codes of extensions.code.
const (
	Unauthenticated     = "UNAUTHENTICATED"
	Forbidden           = "FORBIDDEN"
	NotFound            = "NOT_FOUND"
	BadUserInput        = "BAD_USER_INPUT"
	Conflict            = "CONFLICT"
	RateLimited         = "RATE_LIMITED"
	UpstreamUnavailable = "UPSTREAM_UNAVAILABLE"
	Internal            = "INTERNAL"
)

// Input is an error in the caller's arguments, found by the gateway.
type Input struct{ Msg string }

func (e *Input) Error() string { return e.Msg }

// Inputf returns an *Input error.
func Inputf(format string, args ...any) error { return &Input{Msg: fmt.Sprintf(format, args...)} }

// ErrNotFound is returned by resolvers for a global ID of a type that exists
// but an object that does not.
var ErrNotFound = errors.New("not found")

// Present is the gqlgen error presenter.
func Present(ctx context.Context, err error) *gqlerror.Error {
	var gqlErr *gqlerror.Error
	if errors.As(err, &gqlErr) && gqlErr.Err == nil {
		// Parse and validation errors made by gqlgen itself: already typed by it.
		return gqlErr
	}
	e := graphql.DefaultErrorPresenter(ctx, err)
	if e.Extensions == nil {
		e.Extensions = map[string]any{}
	}
	code, msg, ext := classify(err)
	e.Message = msg
	e.Extensions["code"] = code
	for k, v := range ext {
		e.Extensions[k] = v
	}
	if _, ok := e.Extensions["requestId"]; !ok {
		// Errors of the gateway's own (INTERNAL above all) name the gateway's
		// request id, which its logs carry, so an operator can find them.
		if id := RequestID(ctx); id != "" {
			e.Extensions["requestId"] = id
		}
	}
	return e
}

type requestIDKey struct{}

// WithRequestID returns a context carrying the gateway's id of the request.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the gateway's id of the request, if any.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// classify returns the code, the public message and the extra extensions of err.
func classify(err error) (string, string, map[string]any) {
	var in *Input
	if errors.As(err, &in) {
		return BadUserInput, in.Msg, nil
	}
	if errors.Is(err, relay.ErrInvalidID) || errors.Is(err, relay.ErrInvalidCursor) {
		return BadUserInput, rootMessage(err), nil
	}
	if errors.Is(err, upstream.ErrNoAPIKey) {
		return Unauthenticated, "an API key is required in the Authorization header", nil
	}
	if errors.Is(err, ErrNotFound) {
		return NotFound, "not found", nil
	}
	var ue *upstream.Error
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
		code, msg := upstreamCode(ue)
		if ue.Status == 0 {
			delete(ext, "status")
		}
		return code, msg, ext
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return UpstreamUnavailable, "the request ran out of time", nil
	}
	return Internal, "internal error", nil
}

// upstreamCode maps an upstream error to a code and a message fit to show.
// Messages of 4xx answers are the upstream's own words to the caller; of
// failures on its side they are ours, since they may describe internals.
func upstreamCode(ue *upstream.Error) (string, string) {
	switch {
	case errors.Is(ue, upstream.ErrUnauthorized):
		return Unauthenticated, ue.Message
	case errors.Is(ue, upstream.ErrForbidden):
		return Forbidden, ue.Message
	case errors.Is(ue, upstream.ErrNotFound):
		return NotFound, ue.Message
	case errors.Is(ue, upstream.ErrConflict):
		return Conflict, ue.Message
	case errors.Is(ue, upstream.ErrRateLimited):
		return RateLimited, "the upstream is throttling requests; retry later"
	case errors.Is(ue, upstream.ErrInvalidRequest):
		return BadUserInput, ue.Message
	case errors.Is(ue, upstream.ErrBadResponse):
		return Internal, "the upstream sent an answer the gateway could not read"
	case errors.Is(ue, context.DeadlineExceeded), errors.Is(ue, context.Canceled):
		return UpstreamUnavailable, "the upstream did not answer in time"
	case errors.Is(ue, upstream.ErrUnavailable):
		return UpstreamUnavailable, "the upstream is unavailable; retry later"
	}
	return Internal, "internal error"
}

// rootMessage is the message of the innermost wrapped error chain head,
// without the path prefixes resolvers add.
func rootMessage(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		var in *Input
		if errors.As(u, &in) {
			return in.Msg
		}
		if u == relay.ErrInvalidID || u == relay.ErrInvalidCursor {
			return err.Error()
		}
		err = u
	}
}

// Recover is the gqlgen recover function: a panic becomes INTERNAL without
// its value or stack reaching the caller.
func Recover(ctx context.Context, v any) error {
	return fmt.Errorf("panic in resolver: %v", v)
}
