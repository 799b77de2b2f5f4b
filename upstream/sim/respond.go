package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Wire formats fixed by the contract.
const (
	timestampLayout = "2006-01-02T15:04:05.000Z"
	dateLayout      = "2006-01-02"
)

// response is a complete answer, built before anything is written so that it
// can be stored for idempotent replay or thrown away by a dropped connection.
type response struct {
	status int
	body   []byte
	header http.Header // extra headers (Allow, Retry-After, Idempotent-Replayed)
}

func (r *response) setHeader(k, v string) {
	if r.header == nil {
		r.header = http.Header{}
	}
	r.header.Set(k, v)
}

// write sends the response with the headers every answer carries.
func (r response) write(w http.ResponseWriter, reqID string) {
	h := w.Header()
	for k, vs := range r.header {
		h[k] = append([]string(nil), vs...)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Request-Id", reqID)
	h.Set("Content-Length", strconv.Itoa(len(r.body)))
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body)
}

// newRequestID returns a fresh uuid v4; request ids are the one thing besides
// write timestamps that is not deterministic.
func newRequestID() string { return uuid.NewString() }

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

// errorResponse builds the error envelope.
func errorResponse(reqID string, status int, code, message string) response {
	b, err := encodeJSON(errorBody{errorDetail{code, message, reqID}})
	if err != nil {
		// Unreachable for these plain strings, but never answer an empty body.
		b = []byte(`{"error":{"code":"internal_error","message":"encoding failed","request_id":"` + reqID + `"}}`)
		status = http.StatusInternalServerError
	}
	return response{status: status, body: b}
}

// encodeJSON marshals without HTML escaping, so names such as "Storage & Data"
// read as written.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// call is one request that passed every check and reached its operation.
type call struct {
	s      *Server
	r      *http.Request
	key    *apiKey
	org    *org
	params map[string]string
	reqID  string
}

// fail answers with the error envelope.
func (c *call) fail(status int, code, message string) response {
	return errorResponse(c.reqID, status, code, message)
}

// invalid answers 400 validation_error.
func (c *call) invalid(message string) response {
	return c.fail(http.StatusBadRequest, "validation_error", message)
}

// notFound answers 404 not_found; the same answer for an unknown id and for
// another organization's id, so ids do not leak across tenants.
func (c *call) notFound(what string) response {
	return c.fail(http.StatusNotFound, "not_found", what+" not found")
}

// ok answers 200 with {"data": v}.
func (c *call) ok(v any) response {
	b, err := encodeJSON(struct {
		Data any `json:"data"`
	}{v})
	if err != nil {
		return c.fail(http.StatusInternalServerError, "internal_error", "Internal server error")
	}
	return response{status: http.StatusOK, body: b}
}

// dec2 is a number with two decimals held exactly as hundredths: money in
// cents, percentages and scores in hundredths. It prints as a JSON number.
type dec2 int64

// MarshalJSON prints the value as a plain decimal number; dividing the exact
// integer by 100 and printing the shortest representation gives at most two
// decimals.
func (d dec2) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(d)/100, 'f', -1, 64), nil
}

// timestamp prints as an ISO 8601 UTC timestamp with milliseconds.
type timestamp time.Time

// MarshalJSON prints the contract's timestamp form.
func (t timestamp) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(timestampLayout) + `"`), nil
}

// date prints as YYYY-MM-DD.
type date time.Time

// MarshalJSON prints the contract's date form.
func (d date) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(d).UTC().Format(dateLayout) + `"`), nil
}

// roundDiv divides and rounds half away from zero; b must be positive.
func roundDiv(a, b int64) int64 {
	if a >= 0 {
		return (a + b/2) / b
	}
	return -((-a + b/2) / b)
}
