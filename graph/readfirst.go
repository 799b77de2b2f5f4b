package graph

import (
	"context"
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/costgw/gateway/graph/codes"
)

// writeMargin is how long after the deadline guard's own answer is due
// (the deadline and deadlineGrace) the connection still takes the answer's
// bytes; then writing stops, whatever the client has taken of it.
const writeMargin = time.Second

// A place in admission bounds work, not waiting on a client: a client that
// sends its body a byte a second, or never reads its answer, must not hold
// a place while it does. So readFirst, before the request is admitted,
// bounds the connection's I/O by the request's deadline and reads the body:
//
//   - the body must have arrived by the deadline: the connection's read
//     deadline is the request's while it is read (not the server's fixed
//     ReadTimeout); a body still arriving then is answered 504
//     REQUEST_TIMEOUT at once, with Connection: close, and is never
//     admitted; the rest of a body that is not read to its end is never
//     read, and its connection closes after the answer;
//   - the answer must have been written by the deadline, deadlineGrace
//     and writeMargin: the connection's write deadline is set so, and a
//     client that does not take its answer by then has it cut off (the
//     access log says so), which ends the handler and frees its place;
//   - the body is read whole, up to its limit (bodyLimit), into a buffer
//     the transport decodes once the request is admitted. What the headers
//     tell (checkHTTP: the method, media type, Content-Length) is checked
//     before, and only here when the body is read; a request they refuse is
//     not read, and, like a body too large or that could not be read, is
//     answered by the transport once admitted, so that it counts toward its
//     caller's pace as before.
//
// A request waiting in line thus holds its body (at most NoKeyMaxBodyBytes
// without a key, maxBody with one), not only its headers; each caller's
// are bounded by MaxCallerBodyBytes, past which the
// read stops and the request is answered 429 once admitted
// (docs/security.md).
func readFirst(maxBody int64, adm *admission, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dl, hasDeadline := r.Context().Deadline()
		rc := http.NewResponseController(w)
		if hasDeadline {
			// ErrNotSupported (a recorder in tests): nothing to bound.
			_ = rc.SetWriteDeadline(dl.Add(deadlineGrace + writeMargin))
		}
		_, hasKey := BearerKey(r)
		limit := bodyLimit(maxBody, hasKey)
		if r.Method != http.MethodPost || checkHTTP(r, limit, hasKey) != nil {
			if r.ContentLength != 0 {
				// A body that is not read: net/http would read up to
				// 256 KiB of it before the answer (and after it), at the
				// client's pace, holding the request's place.
				w.Header().Set("Connection", "close")
				_ = rc.SetReadDeadline(time.Now())
			}
			next.ServeHTTP(w, r)
			return
		}
		// The body's bytes are the caller's from their arrival until they
		// are decoded: a caller that holds MaxCallerBodyBytes already is
		// refused, as soon as more of its bytes arrive. What is counted is
		// what arrived, not what Content-Length announced, so a connection
		// that sends headers and waits holds nothing of its caller's.
		id, _ := adm.caller(r)
		b := &earlyBody{adm: adm, id: id}
		if hasDeadline {
			_ = rc.SetReadDeadline(dl)
		}
		b.buf, b.err = readBody(w, r, limit, b.hold)
		switch {
		case b.err != nil:
			// The rest of the body is never read: net/http would read on
			// for it after the answer (up to 256 KiB, with no deadline),
			// holding a connection whose answer said Connection: close.
			_ = rc.SetReadDeadline(time.Now())
		case hasDeadline:
			// Once the body is read, net/http reads on in the background to
			// see the client go; a read deadline that passes then would
			// cancel the connection's context. The handler has its own.
			_ = rc.SetReadDeadline(time.Time{})
		}
		defer b.done() // unless the transport took the body
		switch {
		case errors.Is(b.err, errCallerBodies):
			// Its bytes go back at once, and the rest is not read; it is
			// answered 429 once admitted (the transport), so that the
			// refusal counts toward its caller's pace: answered at once, a
			// flood of bodies would come back at once, as fast as refused.
			b.done()
			w.Header().Set("Connection", "close")
		case b.err != nil && (errors.Is(b.err, os.ErrDeadlineExceeded) || hasDeadline && !time.Now().Before(dl)):
			w.Header().Set("Connection", "close")
			refuseEarly(w, r, http.StatusGatewayTimeout, codes.Errorf(codes.RequestTimeout,
				"the request body had not arrived by the request's deadline"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), earlyBodyKey{}, b)))
	})
}

// errCallerBodies ends the read of a body whose caller holds
// MaxCallerBodyBytes of bodies already.
var errCallerBodies = errors.New("the caller holds too many bytes of bodies")

// refuseEarly refuses a request before it is admitted, with its outcome
// in its Info as for any other.
func refuseEarly(w http.ResponseWriter, r *http.Request, status int, err *codes.Error) {
	if InfoFrom(r.Context()) == nil {
		ctx, _ := WithInfo(r.Context())
		r = r.WithContext(ctx)
	}
	refuseRequest(w, r, status, err)
}

// earlyBody is a request body readFirst read, or the error that ended the
// read, for the transport to take, with the bytes of its caller's bound
// (admission.holdBody) it holds until it is given back.
type earlyBody struct {
	buf  *[]byte
	err  error
	adm  *admission
	id   callerID
	held int64
}

// hold takes the n bytes that arrived from the caller's bound.
func (b *earlyBody) hold(n int) bool {
	if !b.adm.holdBody(b.id, int64(n)) {
		return false
	}
	b.held += int64(n)
	return true
}

// done gives the buffer back, and its bytes to the caller's bound.
func (b *earlyBody) done() {
	putBody(b.buf)
	b.buf = nil
	if b.held > 0 {
		b.adm.dropBody(b.id, b.held)
		b.held = 0
	}
}

type earlyBodyKey struct{}

// takeBody returns the request's body as readFirst read it (b, from the
// request's context), and done, which gives it back once it is decoded; a
// request readFirst did not read (b is nil) is read here.
func takeBody(w http.ResponseWriter, r *http.Request, b *earlyBody, limit int64) (buf *[]byte, done func(), err error) {
	if b == nil {
		buf, err = readBody(w, r, limit, nil)
		return buf, func() { putBody(buf) }, err
	}
	return b.buf, b.done, b.err
}
