package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxBody caps request bodies; anything larger answers 413.
const maxBody = 1 << 20

// List limits fixed by the contract.
const (
	defaultLimit = 50
	maxLimit     = 200
)

// readObject reads the request body through the size cap and parses it as a
// JSON object. It returns the object's fields and the canonical JSON of the
// body (sorted keys, no spaces) used for idempotency fingerprints and cache
// keys.
func (c *call) readObject() (map[string]json.RawMessage, string, *response) {
	mt, _, err := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		r := c.fail(http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json")
		return nil, "", &r
	}
	b, err := io.ReadAll(io.LimitReader(c.r.Body, maxBody+1))
	if err != nil {
		r := c.fail(http.StatusBadRequest, "invalid_json", "The request body could not be read")
		return nil, "", &r
	}
	if len(b) > maxBody {
		r := c.fail(http.StatusRequestEntityTooLarge, "payload_too_large", "The request body is larger than 1 MiB")
		return nil, "", &r
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		r := c.fail(http.StatusBadRequest, "invalid_json", "The request body must be a JSON object")
		return nil, "", &r
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		r := c.fail(http.StatusBadRequest, "invalid_json", "The request body must hold exactly one JSON object")
		return nil, "", &r
	}
	if _, isObj := v.(map[string]any); !isObj {
		r := c.fail(http.StatusBadRequest, "invalid_json", "The request body must be a JSON object")
		return nil, "", &r
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		r := c.fail(http.StatusBadRequest, "invalid_json", "The request body must be a JSON object")
		return nil, "", &r
	}
	canon, err := json.Marshal(v)
	if err != nil {
		r := c.fail(http.StatusBadRequest, "invalid_json", "The request body must be a JSON object")
		return nil, "", &r
	}
	return obj, string(canon), nil
}

// fields reads typed fields of a JSON object and remembers the first error,
// so a handler reads everything and then checks once. Unknown properties are
// never looked at: request bodies are open.
type fields struct {
	obj    map[string]json.RawMessage
	prefix string  // "dateRange." for nested objects, so messages name the full field
	root   *fields // where errors go: the top-level object, so one check covers nested ones
	err    string  // the first error; only set on the root
}

func newFields(obj map[string]json.RawMessage, prefix string) *fields {
	return &fields{obj: obj, prefix: prefix}
}

func (f *fields) failf(name, msg string) {
	r := f
	if f.root != nil {
		r = f.root
	}
	if r.err == "" {
		r.err = f.prefix + name + " " + msg
	}
}

// raw returns the raw value of a present field.
func (f *fields) raw(name string) (json.RawMessage, bool) {
	v, ok := f.obj[name]
	return v, ok
}

// has reports whether the field is present (null counts as present).
func (f *fields) has(name string) bool {
	_, ok := f.obj[name]
	return ok
}

// isNull reports whether the field is present and null.
func (f *fields) isNull(name string) bool {
	v, ok := f.obj[name]
	return ok && isJSONNull(v)
}

func isJSONNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// require records an error when the field is absent.
func (f *fields) require(names ...string) {
	for _, n := range names {
		if !f.has(n) {
			f.failf(n, "is required")
		}
	}
}

// str returns a string field; ok is false when absent or of another type.
func (f *fields) str(name string) (string, bool) {
	v, present := f.raw(name)
	if !present {
		return "", false
	}
	s, ok := jsonString(v)
	if !ok {
		f.failf(name, "must be a string")
		return "", false
	}
	return s, true
}

// jsonString decodes v when it is a JSON string (and not null, a number...).
func jsonString(v json.RawMessage) (string, bool) {
	t := bytes.TrimSpace(v)
	var s string
	if len(t) == 0 || t[0] != '"' || json.Unmarshal(t, &s) != nil {
		return "", false
	}
	return s, true
}

// integer returns an integer field in [lo, hi]. A number with a fraction, a
// string, or null is a type error.
func (f *fields) integer(name string, lo, hi int64) (int64, bool) {
	v, present := f.raw(name)
	if !present {
		return 0, false
	}
	n, ok := parseInteger(v)
	if !ok {
		f.failf(name, "must be an integer")
		return 0, false
	}
	if n < lo || n > hi {
		f.failf(name, "must be from "+strconv.FormatInt(lo, 10)+" to "+strconv.FormatInt(hi, 10))
		return 0, false
	}
	return n, true
}

func parseInteger(v json.RawMessage) (int64, bool) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) != nil {
		return 0, false
	}
	num, ok := x.(json.Number)
	if !ok {
		return 0, false
	}
	if n, err := num.Int64(); err == nil {
		return n, true
	}
	fl, err := num.Float64()
	if err != nil || fl != math.Trunc(fl) || math.Abs(fl) > 1<<53 {
		return 0, false
	}
	return int64(fl), true
}

// boolean returns a boolean field.
func (f *fields) boolean(name string) (bool, bool) {
	v, present := f.raw(name)
	if !present {
		return false, false
	}
	switch string(bytes.TrimSpace(v)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	f.failf(name, "must be a boolean")
	return false, false
}

// date returns a YYYY-MM-DD field as midnight UTC.
func (f *fields) date(name string) (time.Time, bool) {
	v, present := f.raw(name)
	if !present {
		return time.Time{}, false
	}
	s, ok := jsonString(v)
	var t time.Time
	if ok {
		t, ok = parseDate(s)
	}
	if !ok {
		f.failf(name, "must be a date (YYYY-MM-DD)")
		return time.Time{}, false
	}
	return t, true
}

func parseDate(s string) (time.Time, bool) {
	if len(s) != len(dateLayout) {
		return time.Time{}, false
	}
	t, err := time.Parse(dateLayout, s)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// object returns a nested object field as fields named under it.
func (f *fields) object(name string) (*fields, bool) {
	v, present := f.raw(name)
	if !present {
		return nil, false
	}
	var obj map[string]json.RawMessage
	if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '{' || json.Unmarshal(v, &obj) != nil {
		f.failf(name, "must be an object")
		return nil, false
	}
	return f.child(obj, name), true
}

// child returns the fields of a nested object whose errors go to f's root.
func (f *fields) child(obj map[string]json.RawMessage, name string) *fields {
	root := f
	if f.root != nil {
		root = f.root
	}
	return &fields{obj: obj, prefix: f.prefix + name + ".", root: root}
}

// array returns the raw items of an array field.
func (f *fields) array(name string) ([]json.RawMessage, bool) {
	v, present := f.raw(name)
	if !present {
		return nil, false
	}
	var items []json.RawMessage
	if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '[' || json.Unmarshal(v, &items) != nil {
		f.failf(name, "must be an array")
		return nil, false
	}
	return items, true
}

// oneOf returns a string field that must be one of the allowed values.
func (f *fields) oneOf(name string, allowed ...string) (string, bool) {
	s, ok := f.str(name)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	f.failf(name, "must be one of "+strings.Join(allowed, ", "))
	return "", false
}

// compactJSON returns the compact form of a raw JSON value, so values stored
// "as given" print without the caller's whitespace.
func compactJSON(v json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return nil
	}
	return json.RawMessage(buf.Bytes())
}

// page reads limit and cursor. The cursor is keyset: it names the sequence
// number of the last record returned, so deletes between pages neither skip
// nor repeat records.
func (c *call) page() (limit int, after int64, bad *response) {
	q := c.r.URL.Query()
	limit, ok := queryValue(q, "limit", parseLimit, defaultLimit)
	if !ok {
		r := c.fail(http.StatusBadRequest, "invalid_limit", "limit must be an integer from 1 to 200")
		return 0, 0, &r
	}
	if after, ok = queryValue(q, "cursor", decodeCursor, 0); !ok {
		r := c.fail(http.StatusBadRequest, "invalid_cursor", "cursor is not a cursor this API issued")
		return 0, 0, &r
	}
	return limit, after, nil
}

// queryValue parses the first value of the query parameter name, or is def
// when the query has none; ok is false when the value does not parse.
func queryValue[T any](q url.Values, name string, parse func(string) (T, bool), def T) (v T, ok bool) {
	vs, present := q[name]
	if !present {
		return def, true
	}
	return parse(vs[0])
}

func parseLimit(s string) (int, bool) {
	if s == "" || len(s) > 4 {
		return 0, false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxLimit {
		return 0, false
	}
	return n, true
}

// encodeCursor returns base64url (no padding) of {"after":N}.
func encodeCursor(after int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(`{"after":` + strconv.FormatInt(after, 10) + `}`))
}

// decodeCursor accepts exactly the form encodeCursor produces.
func decodeCursor(s string) (int64, bool) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return 0, false
	}
	const pre, suf = `{"after":`, `}`
	str := string(b)
	if !strings.HasPrefix(str, pre) || !strings.HasSuffix(str, suf) {
		return 0, false
	}
	digits := str[len(pre) : len(str)-len(suf)]
	if digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// pagination is the contract's pagination object.
type pagination struct {
	Limit      int     `json:"limit"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
	Total      *int    `json:"total,omitempty"`
}

// pageOf applies limit and cursor to a list of n items whose sequence
// numbers increase with the index, returning the bounds of the page.
func (c *call) pageOf(n int, seqAt func(int) int64, total bool) (start, end int, p pagination, bad *response) {
	limit, after, bad := c.page()
	if bad != nil {
		return 0, 0, p, bad
	}
	start = sort.Search(n, func(i int) bool { return seqAt(i) > after })
	end = min(start+limit, n)
	p = pagination{Limit: limit, HasMore: end < n}
	if p.HasMore {
		cur := encodeCursor(seqAt(end - 1))
		p.NextCursor = &cur
	}
	if total {
		p.Total = &n
	}
	return start, end, p, nil
}

// list answers a list response.
func (c *call) list(data any, p pagination) response {
	b, err := encodeJSON(struct {
		Data       any        `json:"data"`
		Pagination pagination `json:"pagination"`
	}{data, p})
	if err != nil {
		return c.fail(http.StatusInternalServerError, "internal_error", "Internal server error")
	}
	return response{status: http.StatusOK, body: b}
}

// listPage answers one page of an immutable list.
func listPage[T any](c *call, items []T, seq func(*T) int64, total bool) response {
	start, end, p, bad := c.pageOf(len(items), func(i int) int64 { return seq(&items[i]) }, total)
	if bad != nil {
		return *bad
	}
	page := items[start:end]
	if page == nil {
		page = []T{}
	}
	return c.list(page, p)
}

// idempotencyKey reads and checks the Idempotency-Key header.
func (c *call) idempotencyKey() (string, *response) {
	vs, present := c.r.Header[http.CanonicalHeaderKey("Idempotency-Key")]
	if !present || len(vs) == 0 {
		r := c.fail(http.StatusBadRequest, "idempotency_key_missing", "Idempotency-Key header is required")
		return "", &r
	}
	k := strings.TrimSpace(vs[0])
	if k == "" || utf8.RuneCountInString(k) > 64 {
		r := c.fail(http.StatusBadRequest, "idempotency_key_invalid", "Idempotency-Key must be 1 to 64 characters")
		return "", &r
	}
	return k, nil
}
