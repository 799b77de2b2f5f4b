package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors. Every error a Client method returns wraps one of these,
// so callers branch with errors.Is and never on error text.
var (
	// ErrNoAPIKey means the context carried no bearer key; nothing was sent.
	ErrNoAPIKey = errors.New("upstream: no API key in context")
	// ErrInvalidRequest means the request was refused before sending (for
	// example an Idempotency-Key over 64 characters) or answered 400, 413, 415
	// or another 4xx that has no sentinel of its own (405, 422, …).
	ErrInvalidRequest = errors.New("upstream: invalid request")
	// ErrUnauthorized matches 401 answers, and a bearer key refused before
	// sending because no upstream could accept it (code malformed_api_key:
	// empty after trimming, too long, or holding characters outside
	// printable ASCII, spaces included). Either way the caller's credential
	// is what is wrong, so both are answered alike.
	ErrUnauthorized = errors.New("upstream: unauthorized")
	// ErrForbidden matches 403 answers (missing scope or entitlement).
	ErrForbidden = errors.New("upstream: forbidden")
	// ErrNotFound matches 404 answers: an unknown id, or one of another organization.
	ErrNotFound = errors.New("upstream: not found")
	// ErrConflict matches 409 answers, such as an Idempotency-Key reused with another body.
	ErrConflict = errors.New("upstream: conflict")
	// ErrRateLimited matches 429 answers.
	ErrRateLimited = errors.New("upstream: rate limited")
	// ErrUnavailable matches 5xx answers and requests that got no answer at all
	// (connection refused or dropped, timeout).
	ErrUnavailable = errors.New("upstream: unavailable")
	// ErrBadResponse means a success answer whose body could not be decoded,
	// or an answer of a status the client does not use (3xx it did not follow).
	ErrBadResponse = errors.New("upstream: malformed response")
)

// Error is the one error type for a failed upstream call. For an answer with
// the error envelope, Code, Message and RequestID come from it; for an answer
// without one (a proxy's HTML page, an empty 502) they are filled from the
// status. Status is 0 when no answer arrived; Err then holds the cause.
//
// Error never holds the bearer key, a request URL or a raw response body.
type Error struct {
	Op         string        // operation id of the contract, such as "getBudget"
	Status     int           // HTTP status, 0 when there was no answer
	Code       string        // error.code of the envelope, or a code derived from Status
	Message    string        // error.message of the envelope, or the status text
	RequestID  string        // error.request_id, or the X-Request-Id header; escaped (see scrub)
	RetryAfter time.Duration // from the Retry-After header of a 429 or 503, if any
	// IdempotencyKey is the key a create or update was sent with, so that a
	// caller can retry the same write safely after an ambiguous failure.
	IdempotencyKey string
	Err            error // the transport or decoding cause, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("upstream: ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	switch {
	case e.Status == 0 && e.Err != nil:
		b.WriteString("no response: ")
		b.WriteString(e.Err.Error())
	case e.Err != nil:
		fmt.Fprintf(&b, "%d %s: %v", e.Status, e.Code, e.Err)
	default:
		fmt.Fprintf(&b, "%d %s: %s", e.Status, e.Code, e.Message)
	}
	if e.RequestID != "" {
		b.WriteString(" (request_id ")
		b.WriteString(e.RequestID)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the transport or decoding cause, so errors.Is finds
// context.Canceled or context.DeadlineExceeded.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether the error belongs to the class of a sentinel.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrInvalidRequest:
		switch e.Status {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict,
			http.StatusTooManyRequests:
			return false // each has its own sentinel
		}
		return (e.Status >= 400 && e.Status < 500) || e.Code == codeRefused
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized || e.Code == codeMalformedKey
	case ErrForbidden:
		return e.Status == http.StatusForbidden
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrConflict:
		return e.Status == http.StatusConflict
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests
	case ErrUnavailable:
		return e.Status >= 500 || (e.Status == 0 && e.Code != codeRefused && e.Code != codeMalformedKey)
	case ErrBadResponse:
		return e.Code == codeBadResponse || (e.Status >= 100 && e.Status < 200) || (e.Status >= 300 && e.Status < 400)
	}
	return false
}

// Temporary reports whether the same request may succeed if sent again:
// throttling, a server error, or no answer at all.
func (e *Error) Temporary() bool {
	return e.Status == http.StatusTooManyRequests || e.Status >= 500 || (e.Status == 0 && e.Code == codeNoResponse)
}

// scrub keeps of what the upstream said only what may travel: the
// message of the contract's envelope without the key, the upstream's
// address, URLs or header echoes, at most maxMessageLen bytes; a code only
// when it is a short token; the request id escaped (scrubber.requestID).
// A message that cannot be cleaned gives way to the status text.
func (e *Error) scrub(s scrubber) {
	e.Message = s.text(e.Message, maxMessageLen, statusText(e.Status))
	e.Code = token(s.text(e.Code, 64, ""), 64, "http_"+strconv.Itoa(e.Status))
	e.RequestID = s.requestID(e.RequestID)
}

// Codes the client itself assigns when the answer carried none.
const (
	codeRefused      = "request_refused"   // refused before sending
	codeMalformedKey = "malformed_api_key" // the bearer key cannot be sent
	codeNoResponse   = "no_response"       // transport failure
	codeBadResponse  = "malformed_response"
)

// maxErrorBody caps how much of an error answer is read: enough for any
// envelope, small enough that a hostile or broken upstream cannot make us
// buffer a large page.
const maxErrorBody = 64 << 10

// errorFromResponse turns a non-2xx answer into an *Error. It reads at most
// maxErrorBody bytes and never keeps the body in the error; it returns what
// it read, for a log line's excerpt. What the answer says is taken as is:
// the caller scrubs it.
func errorFromResponse(op string, resp *http.Response) (*Error, []byte) {
	e := &Error{
		Op:         op,
		Status:     resp.StatusCode,
		RequestID:  resp.Header.Get("X-Request-Id"),
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var env struct {
		Error *struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil && env.Error.Code != "" {
		e.Code = env.Error.Code
		e.Message = env.Error.Message
		if e.Message == "" {
			e.Message = statusText(resp.StatusCode) // an envelope without a message still says something
		}
		if env.Error.RequestID != "" {
			e.RequestID = env.Error.RequestID
		}
		return e, body
	}
	e.Code = "http_" + strconv.Itoa(resp.StatusCode)
	e.Message = statusText(resp.StatusCode) + " (the answer carried no error envelope)"
	return e, body
}

// statusText is http.StatusText, or a fallback for a status it does not know.
func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "unexpected status " + strconv.Itoa(status)
}

// parseRetryAfter reads a Retry-After value in seconds or as an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		if s < 0 {
			return 0
		}
		if s > int(math.MaxInt64/time.Second) {
			return math.MaxInt64 // would overflow; it is "too long" all the same
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
