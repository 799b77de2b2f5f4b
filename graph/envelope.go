package graph

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxBodyNesting bounds how deep a request body's JSON nests, the body's
// own object counted: no input of the schema nests deeper than a JSON
// scalar's 32 levels (model.MaxJSONDepth) under a variable, an input
// object and a list, so a body nested deeper is refused before anything
// of it is decoded.
const maxBodyNesting = 64

// envelope is a POST body's members, read in one pass over the body
// (decodeEnvelope): the strings decoded, the objects checked and kept as
// raw JSON for decodeObject.
type envelope struct {
	query, operationName, documentID, docID optString
	// variables and extensions are the raw JSON of an object; nil when
	// absent or null.
	variables, extensions []byte
	// seen marks the members above the body has had, each by its bit.
	seen uint8
}

type optString struct {
	v   string
	set bool
}

// envelopeError says what is wrong with a body, never what it holds.
type envelopeError struct {
	msg string
	// deepVariables: the variables nest deeper than maxBodyNesting.
	deepVariables bool
}

func (e *envelopeError) Error() string { return e.msg }

var errNotObject = &envelopeError{msg: "the body is not a JSON object"}

// decodeEnvelope reads a POST body: exactly one JSON object, query,
// operationName, documentId and doc_id strings or null, variables and
// extensions objects or null, any other member any JSON value, none of
// these six twice. It is encoding/json's reading of the same body (strings
// decoded alike, invalid UTF-8 replaced by U+FFFD), in one
// pass and with no copy but the decoded strings; member names match
// exactly, as the GraphQL-over-HTTP spec has them, not case-insensitively
// as encoding/json's do.
func decodeEnvelope(body []byte) (envelope, *envelopeError) {
	var env envelope
	s := jsonScanner{b: body}
	s.ws()
	if !s.byte('{') {
		return env, errNotObject
	}
	s.ws()
	if !s.byte('}') {
		for {
			s.ws()
			name, ok := s.key()
			if !ok {
				return env, errNotObject
			}
			s.ws()
			if !s.byte(':') {
				return env, errNotObject
			}
			s.ws()
			if err := env.member(&s, name); err != nil {
				return env, err
			}
			s.ws()
			if s.byte(',') {
				continue
			}
			if s.byte('}') {
				break
			}
			return env, errNotObject
		}
	}
	s.ws()
	if s.i < len(s.b) {
		return env, &envelopeError{msg: "the body has data after its JSON object"}
	}
	return env, nil
}

// requestMembers are the parameters of a GraphQL request, as a POST body's
// members and a GET's query parameters; a request names each once at most.
var requestMembers = []string{"query", "operationName", "variables", "extensions", "documentId", "doc_id"}

// member reads the value of the member name.
func (env *envelope) member(s *jsonScanner, name []byte) *envelopeError {
	var str *optString
	var obj *[]byte
	var bit uint8
	switch string(name) {
	case "query":
		str, bit = &env.query, 1
	case "operationName":
		str, bit = &env.operationName, 2
	case "documentId":
		str, bit = &env.documentID, 4
	case "doc_id":
		str, bit = &env.docID, 8
	case "variables":
		obj, bit = &env.variables, 16
	case "extensions":
		obj, bit = &env.extensions, 32
	}
	if bit == 0 && len(name) <= len("operationName") {
		for _, m := range requestMembers {
			if strings.EqualFold(string(name), m) {
				// encoding/json, and readers built on it, take it for m.
				return &envelopeError{msg: "the body has a member named " + string(name) + ": name it " + m + " (names are case-sensitive)"}
			}
		}
	}
	if env.seen&bit != 0 {
		// Which one wins is the reader's choice: a proxy that read the
		// first could pass what the gateway, reading the last, runs.
		return &envelopeError{msg: "the body has two members named " + string(name) + ": send one"}
	}
	env.seen |= bit
	start := s.i
	switch {
	case str != nil && s.peek() == '"':
		v, ok := s.string()
		if !ok {
			return errNotObject
		}
		*str = optString{v, true}
		return nil
	case (str != nil || obj != nil) && s.literal("null"):
		if str != nil {
			*str = optString{}
		} else {
			*obj = nil
		}
		return nil
	case str != nil:
		if err := s.value(2); err != nil {
			return err
		}
		return &envelopeError{msg: "the body's " + string(name) + " has the wrong type"}
	}
	isObject := s.peek() == '{'
	if err := s.value(2); err != nil {
		if obj == &env.variables {
			if v := variablesError(err); v != nil {
				return v
			}
		}
		return err
	}
	if obj != nil {
		if !isObject {
			return &envelopeError{msg: "the body's " + string(name) + " must be a JSON object"}
		}
		*obj = s.b[start:s.i]
	}
	return nil
}

var errTooDeep = &envelopeError{msg: "the body nests deeper than " + strconv.Itoa(maxBodyNesting) + " levels"}

// maxBodyList bounds the values of a list in a request body, ten times the
// most any list argument of the schema takes (nodes' 100 IDs): a longer one
// is refused while the body is checked, before any of it is decoded: every
// value of a list costs memory in the cost estimate, in gqlparser's and
// gqlgen's coercion, and in decoding (docs/security.md, "Limits").
const maxBodyList = 1000

// errTooLong is a body with a list of more than maxBodyList values.
var errTooLong = &envelopeError{msg: "the body has a list of more than " + strconv.Itoa(maxBodyList) + " values"}

// variablesError is what err, met in the variables, says of them: a user's
// input (BAD_USER_INPUT, with the status of a request error) when they nest
// too deep or hold too long a list; nil for any other error.
func variablesError(err *envelopeError) *envelopeError {
	switch err {
	case errTooDeep:
		return &envelopeError{msg: "the variables nest deeper than " + strconv.Itoa(maxBodyNesting-1) +
			" levels; a JSON input may nest 32", deepVariables: true}
	case errTooLong:
		return &envelopeError{msg: "the variables hold a list of more than " + strconv.Itoa(maxBodyList) +
			" values", deepVariables: true}
	}
	return nil
}

// checkJSONObject checks that raw is one JSON object (or null), nested at
// most maxBodyNesting−1 deep, before decodeObject decodes it.
func checkJSONObject(raw []byte) *envelopeError {
	s := jsonScanner{b: raw}
	s.ws()
	if err := s.value(2); err != nil {
		return err
	}
	s.ws()
	if s.i < len(s.b) {
		return errNotObject
	}
	return nil
}

// jsonScanner reads JSON from b at i.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// byte consumes c if it is next.
func (s *jsonScanner) byte(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

func (s *jsonScanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// key reads a member name: its bytes when it has no escape (the common
// case, no copy), else decoded.
func (s *jsonScanner) key() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	end, escaped, ok := scanString(s.b, start)
	if !ok {
		return nil, false
	}
	s.i = end + 1
	if !escaped {
		return s.b[start:end], true
	}
	return []byte(unquote(s.b[start:end])), true
}

// string reads a string value.
func (s *jsonScanner) string() (string, bool) {
	if !s.byte('"') {
		return "", false
	}
	start := s.i
	end, escaped, ok := scanString(s.b, start)
	if !ok {
		return "", false
	}
	s.i = end + 1
	raw := s.b[start:end]
	if !escaped && utf8.Valid(raw) {
		return string(raw), true
	}
	return unquote(raw), true
}

// value skips one JSON value, checking it, at the nesting level depth.
func (s *jsonScanner) value(depth int) *envelopeError {
	switch c := s.peek(); {
	case c == '"':
		end, _, ok := scanString(s.b, s.i+1)
		if !ok {
			return errNotObject
		}
		s.i = end + 1
	case c == '{' || c == '[':
		if depth > maxBodyNesting {
			return errTooDeep
		}
		s.i++
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		s.ws()
		if s.byte(closing) {
			return nil
		}
		for n := 1; ; n++ {
			if c == '[' && n > maxBodyList {
				return errTooLong
			}
			s.ws()
			if c == '{' {
				if s.peek() != '"' {
					return errNotObject
				}
				end, _, ok := scanString(s.b, s.i+1)
				if !ok {
					return errNotObject
				}
				s.i = end + 1
				s.ws()
				if !s.byte(':') {
					return errNotObject
				}
				s.ws()
			}
			if err := s.value(depth + 1); err != nil {
				return err
			}
			s.ws()
			if s.byte(',') {
				continue
			}
			if s.byte(closing) {
				return nil
			}
			return errNotObject
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if !s.number() {
			return errNotObject
		}
	case s.literal("true"), s.literal("false"), s.literal("null"):
	default:
		return errNotObject
	}
	return nil
}

// decode reads one JSON value at the nesting level depth as encoding/json
// with UseNumber decodes it into an any: objects map[string]any, arrays
// []any, numbers json.Number, strings decoded alike. ok is false for what
// is not JSON, or nests deeper than maxBodyNesting.
func (s *jsonScanner) decode(depth int) (v any, ok bool) {
	switch c := s.peek(); {
	case c == '"':
		return s.string()
	case c == '{' || c == '[':
		if depth > maxBodyNesting {
			return nil, false
		}
		s.i++
		s.ws()
		if c == '[' {
			list := []any{}
			if s.byte(']') {
				return list, true
			}
			for {
				s.ws()
				e, ok := s.decode(depth + 1)
				if !ok {
					return nil, false
				}
				list = append(list, e)
				s.ws()
				if s.byte(',') {
					continue
				}
				return list, s.byte(']')
			}
		}
		m := map[string]any{}
		if s.byte('}') {
			return m, true
		}
		for {
			s.ws()
			k, ok := s.string()
			if !ok {
				return nil, false
			}
			s.ws()
			if !s.byte(':') {
				return nil, false
			}
			s.ws()
			if m[k], ok = s.decode(depth + 1); !ok {
				return nil, false
			}
			s.ws()
			if s.byte(',') {
				continue
			}
			return m, s.byte('}')
		}
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.i
		if !s.number() {
			return nil, false
		}
		return json.Number(s.b[start:s.i]), true
	case s.literal("true"):
		return true, true
	case s.literal("false"):
		return false, true
	case s.literal("null"):
		return nil, true
	}
	return nil, false
}

// number skips a JSON number.
func (s *jsonScanner) number() bool {
	digits := func() int {
		j := s.i
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
		}
		return s.i - j
	}
	s.byte('-')
	if s.byte('0') {
		// no more digits: a leading zero stands alone
	} else if s.peek() < '1' || s.peek() > '9' || digits() == 0 {
		return false
	}
	if s.byte('.') && digits() == 0 {
		return false
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// scanString finds the closing quote of a string whose characters start
// at i, checking its escapes and that it holds no control character; it
// reports whether the string has an escape. Runs of plain bytes are
// skipped eight at a time.
func scanString(b []byte, i int) (end int, escaped, ok bool) {
	for i < len(b) {
		for i+8 <= len(b) {
			w := uint64(b[i]) | uint64(b[i+1])<<8 | uint64(b[i+2])<<16 | uint64(b[i+3])<<24 |
				uint64(b[i+4])<<32 | uint64(b[i+5])<<40 | uint64(b[i+6])<<48 | uint64(b[i+7])<<56
			if laneLess(w, 0x20)|laneEq(w, '"')|laneEq(w, '\\') != 0 {
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			return i, escaped, true
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return i, escaped, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if getu4(b[i:]) < 0 {
					return i, escaped, false
				}
				i += 6
			default:
				return i, escaped, false
			}
		case c < 0x20:
			return i, escaped, false
		default:
			i++
		}
	}
	return i, escaped, false
}

// SWAR: every byte of a word at once.
const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// laneLess is non-zero when a byte of w is below b (b ≤ 0x80).
func laneLess(w uint64, b byte) uint64 { return (w - lanes01*uint64(b)) & ^w & lanes80 }

// laneEq is non-zero when a byte of w is b.
func laneEq(w uint64, b byte) uint64 { return laneLess(w^(lanes01*uint64(b)), 1) }

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// unquote decodes the characters of a checked string (scanString) as
// encoding/json does: escapes, surrogate pairs, and U+FFFD for invalid
// UTF-8 and lone surrogates.
func unquote(s []byte) string {
	var out strings.Builder
	out.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			switch e := s[i+1]; e {
			case 'b':
				out.WriteByte('\b')
			case 'f':
				out.WriteByte('\f')
			case 'n':
				out.WriteByte('\n')
			case 'r':
				out.WriteByte('\r')
			case 't':
				out.WriteByte('\t')
			case 'u':
				r := getu4(s[i:])
				i += 6
				if utf16.IsSurrogate(r) {
					if dec := utf16.DecodeRune(r, getu4(s[i:])); dec != utf8.RuneError {
						i += 6
						out.WriteRune(dec)
						continue
					}
					r = utf8.RuneError
				}
				out.WriteRune(r)
				continue
			default: // " \ /
				out.WriteByte(e)
			}
			i += 2
		default:
			// Up to the next escape: as it is when it is valid UTF-8
			// (checked eight bytes at a time), else rune by rune.
			j := bytes.IndexByte(s[i:], '\\')
			if j < 0 {
				j = len(s)
			} else {
				j += i
			}
			if utf8.Valid(s[i:j]) {
				out.Write(s[i:j])
				i = j
				continue
			}
			for i < j {
				r, size := utf8.DecodeRune(s[i:j])
				out.WriteRune(r)
				i += size
			}
		}
	}
	return out.String()
}
