package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// The client decodes answers with the JSON v2 engine set to the semantics of
// encoding/json (v1): the same values and the same tolerance (duplicate
// names with the last one winning, invalid UTF-8 replaced, null leaving a
// value as it was), at a fraction of the cost; only the wording of a
// decoding error differs, and that stays inside an ErrBadResponse. One
// difference: member names are matched exactly, not without regard to case,
// because the contract's names are exact ("Region" is not "region"; in an
// open object it is a member of its own). Decoding upstream answers is much
// of the work of a query; see docs/benchmarks.md.
//
// The records of the contract decode themselves (UnmarshalJSONFrom), member
// by member in one pass over the answer, from a table per type below. The
// table knows which members a type requires: the ones the contract lists
// and the GraphQL schema shows as non-null. An answer without one, or with
// null in its place, is refused ("data[3].name is missing"), rather than
// read as a zero value nobody sent. Open objects (recommendations,
// anomalies) keep their unknown members in the same pass.
var v1Semantics = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv2.MatchCaseInsensitiveNames(false))

// unmarshalRead decodes the JSON value that r holds into v.
func unmarshalRead(r io.Reader, v any) error { return jsonv2.UnmarshalRead(r, v, v1Semantics) }

// decodeAnswer decodes a success answer from r into env.
func decodeAnswer(r io.Reader, env answerEnvelope) error { return unmarshalRead(r, env) }

// memberError is a member of an answer that is missing, null where a value
// is required, or of the wrong kind. Its text names the member by its path
// in the answer, such as data[3].name.
type memberError struct {
	path string
	what string
}

func (e *memberError) Error() string { return e.path + " " + e.what }

// path returns where the decoder stands, as data[3].name, followed by
// member (when not empty).
func path(d *jsontext.Decoder, member string) string {
	var b strings.Builder
	i := 0
	for tok := range d.StackPointer().Tokens() {
		i++
		if kind, _ := d.StackIndex(i); kind == '[' {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	if member != "" {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(member)
	}
	if b.Len() == 0 {
		return "the answer"
	}
	return b.String()
}

// kindName names a JSON kind for an error.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "not JSON"
}

// wrongKind is the error of a value of kind k where want was expected. The
// decoder has read the member's name, so the path ends with it.
func wrongKind(d *jsontext.Decoder, k jsontext.Kind, want string) error {
	if k == 0 {
		// Not a value at all: let the decoder say what is wrong.
		_, err := d.ReadValue()
		if err != nil {
			return err
		}
	}
	return &memberError{path: path(d, ""), what: "is " + kindName(k) + ", not " + want}
}

// nullOr reads the value of kind k where want was expected: a null, which
// reports false and leaves the target as it was, or else wrongKind's error.
func nullOr(d *jsontext.Decoder, k jsontext.Kind, want string) (bool, error) {
	if k == 'n' {
		_, err := d.ReadToken()
		return false, err
	}
	return false, wrongKind(d, k, want)
}

// field is one member of a record of type T: its name, whether the record
// requires it, and how to read its value into a T. read reports whether the
// value was there (not null).
type field[T any] struct {
	name     string
	required bool
	read     func(d *jsontext.Decoder, v *T) (bool, error)
}

// record is the decoding table of the record type T.
type record[T any] struct {
	fields   []field[T]
	index    map[string]int // exact name → index in fields
	required uint64         // a bit per required field
	// extra, for an open object, returns where its unknown members go;
	// nil drops them.
	extra func(*T) *map[string]json.RawMessage
}

func newRecord[T any](extra func(*T) *map[string]json.RawMessage, fields ...field[T]) *record[T] {
	if len(fields) > 64 {
		panic("upstream: a record of more than 64 fields")
	}
	r := &record[T]{fields: fields, index: make(map[string]int, len(fields)), extra: extra}
	for i, f := range fields {
		r.index[f.name] = i
		if f.required {
			r.required |= 1 << i
		}
	}
	return r
}

// lookup returns the field a member name (raw, quoted, as in the answer)
// matches, exactly: the contract's names are exact, so a name that differs
// from a field's only in case is another member. name is the unquoted
// name, for an open object's unknown member.
func (r *record[T]) lookup(raw jsontext.Value) (i int, name string, ok bool) {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		if i, ok := r.index[string(inner)]; ok {
			return i, "", true
		}
		return 0, string(inner), false
	}
	b, _ := jsontext.AppendUnquote(nil, raw) // invalid UTF-8 is replaced, as v1 does
	name = string(b)
	if i, ok := r.index[name]; ok {
		return i, "", true
	}
	return 0, name, false
}

// decode reads one JSON object into v, member by member, and returns which
// fields held a value, and which were null. JSON null for the whole object
// is an error.
func (r *record[T]) decode(d *jsontext.Decoder, v *T) (seen, null uint64, err error) {
	if k := d.PeekKind(); k != '{' {
		if k == 'n' {
			if _, err := d.ReadToken(); err != nil {
				return 0, 0, err
			}
			return 0, 0, &memberError{path: path(d, ""), what: "is null"}
		}
		return 0, 0, wrongKind(d, k, "an object")
	}
	if _, err := d.ReadToken(); err != nil {
		return 0, 0, err
	}
	for {
		switch d.PeekKind() {
		case '}':
			_, err := d.ReadToken()
			return seen, null, err
		case '"':
		default:
			_, err := d.ReadToken() // not a member name: the decoder says why
			return 0, 0, err
		}
		raw, err := d.ReadValue()
		if err != nil {
			return 0, 0, err
		}
		i, name, ok := r.lookup(raw)
		if !ok {
			if r.extra == nil {
				if err := d.SkipValue(); err != nil {
					return 0, 0, err
				}
				continue
			}
			val, err := d.ReadValue()
			if err != nil {
				return 0, 0, err
			}
			m := r.extra(v)
			if *m == nil {
				*m = map[string]json.RawMessage{}
			}
			(*m)[name] = bytes.Clone(val)
			continue
		}
		present, err := r.fields[i].read(d, v)
		if err != nil {
			return 0, 0, err
		}
		if present {
			seen |= 1 << i
		} else {
			null |= 1 << i
		}
	}
}

// missing returns the error for the first required field not in seen (null
// when in null), or nil. The decoder stands just past the object.
func (r *record[T]) missing(d *jsontext.Decoder, seen, null uint64) error {
	m := r.required &^ seen
	if m == 0 {
		return nil
	}
	i := bits.TrailingZeros64(m)
	what := "is missing"
	if null&(1<<i) != 0 && seen&(1<<i) == 0 {
		what = "is null"
	}
	return &memberError{path: path(d, r.fields[i].name), what: what}
}

// decodeChecked decodes one object into v and checks its required fields.
func (r *record[T]) decodeChecked(d *jsontext.Decoder, v *T) error {
	seen, null, err := r.decode(d, v)
	if err != nil {
		return err
	}
	return r.missing(d, seen, null)
}

// Field constructors: name, whether required, and where in a T the value goes.

func str[T any](name string, required bool, at func(*T) *string) field[T] {
	return field[T]{name, required, func(d *jsontext.Decoder, v *T) (bool, error) { return readString(d, at(v)) }}
}

func num[T any](name string, required bool, at func(*T) *float64) field[T] {
	return field[T]{name, required, func(d *jsontext.Decoder, v *T) (bool, error) { return readFloat(d, at(v)) }}
}

func integer[T any](name string, required bool, at func(*T) *int) field[T] {
	return field[T]{name, required, func(d *jsontext.Decoder, v *T) (bool, error) {
		var n int64
		ok, err := readInt(d, &n)
		if ok {
			*at(v) = int(n)
		}
		return ok, err
	}}
}

// integer32 is an integer member the gateway's clients see as GraphQL's
// Int: see readInt32.
func integer32[T any](name string, required bool, at func(*T) *int) field[T] {
	return field[T]{name, required, func(d *jsontext.Decoder, v *T) (bool, error) { return readInt32(d, at(v)) }}
}

func integer64[T any](name string, required bool, at func(*T) *int64) field[T] {
	return field[T]{name, required, func(d *jsontext.Decoder, v *T) (bool, error) { return readInt(d, at(v)) }}
}

func boolean[T any](name string, required bool, at func(*T) *bool) field[T] {
	return field[T]{name, required, func(d *jsontext.Decoder, v *T) (bool, error) { return readBool(d, at(v)) }}
}

func date[T any](name string, required bool, at func(*T) *Date) field[T] {
	return field[T]{name, required, func(d *jsontext.Decoder, v *T) (bool, error) { return readDate(d, at(v)) }}
}

func timestamp[T any](name string, required bool, at func(*T) *Timestamp) field[T] {
	return field[T]{name, required, func(d *jsontext.Decoder, v *T) (bool, error) { return readTimestamp(d, at(v)) }}
}

// optional reads a nullable value: null sets the pointer to nil.
func optional[T, V any](name string, at func(*T) **V, read func(*jsontext.Decoder, *V) (bool, error)) field[T] {
	return field[T]{name, false, func(d *jsontext.Decoder, v *T) (bool, error) {
		p := at(v)
		if d.PeekKind() == 'n' {
			_, err := d.ReadToken()
			*p = nil
			return false, err
		}
		x := new(V)
		ok, err := read(d, x)
		if err == nil {
			*p = x
		}
		return ok, err
	}}
}

func raw[T any](name string, at func(*T) *json.RawMessage) field[T] {
	return field[T]{name, false, func(d *jsontext.Decoder, v *T) (bool, error) {
		val, err := d.ReadValue()
		if err != nil {
			return false, err
		}
		*at(v) = bytes.Clone(val)
		return val.Kind() != 'n', nil
	}}
}

// object reads a nested record of type V into a value.
func object[T, V any](name string, required bool, rec *record[V], at func(*T) *V) field[T] {
	return field[T]{name, required, func(d *jsontext.Decoder, v *T) (bool, error) {
		if d.PeekKind() == 'n' && !required {
			_, err := d.ReadToken()
			return false, err
		}
		return true, rec.decodeChecked(d, at(v))
	}}
}

// objectPtr reads a nullable nested record of type V.
func objectPtr[T, V any](name string, rec *record[V], at func(*T) **V) field[T] {
	return optional(name, at, func(d *jsontext.Decoder, x *V) (bool, error) { return true, rec.decodeChecked(d, x) })
}

// listOf reads an array of values, each read by read; null elements are
// refused. JSON null for the array leaves it nil.
func listOf[T, V any](name string, required bool, at func(*T) *[]V, read func(*jsontext.Decoder, *V) error) field[T] {
	return field[T]{name, required, func(d *jsontext.Decoder, v *T) (bool, error) {
		return readList(d, at(v), read)
	}}
}

func readList[V any](d *jsontext.Decoder, out *[]V, read func(*jsontext.Decoder, *V) error) (bool, error) {
	switch k := d.PeekKind(); k {
	case 'n':
		_, err := d.ReadToken()
		*out = nil
		return false, err
	case '[':
	default:
		return false, wrongKind(d, k, "an array")
	}
	if _, err := d.ReadToken(); err != nil {
		return false, err
	}
	s := (*out)[:0]
	if s == nil {
		s = []V{}
	}
	var zero V
	for d.PeekKind() != ']' {
		if d.PeekKind() == 'n' {
			if _, err := d.ReadToken(); err != nil {
				return false, err
			}
			return false, &memberError{path: path(d, ""), what: "is null"}
		}
		if cap(s) == 0 {
			s = make([]V, 0, 4) // most lists of an answer hold more than one element
		}
		// Read in place: a local V would escape to the heap, one per element.
		s = append(s, zero)
		if err := read(d, &s[len(s)-1]); err != nil {
			return false, err
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return false, err
	}
	*out = s
	return true, nil
}

// records reads an array of records.
func records[T, V any](name string, required bool, rec *record[V], at func(*T) *[]V) field[T] {
	return listOf(name, required, at, rec.decodeChecked)
}

// rawList reads an array of any values, kept as raw JSON.
func rawList[T any](name string, required bool, at func(*T) *[]json.RawMessage) field[T] {
	return listOf(name, required, at, func(d *jsontext.Decoder, x *json.RawMessage) error {
		val, err := d.ReadValue()
		*x = bytes.Clone(val)
		return err
	})
}

// readMembers reads an object member by member, calling each with the
// member's name with the decoder at its value, which each must read. JSON
// null for the object reads nothing and reports false. names, when not nil,
// interns the member names: maps of one answer (history rows, actuals per
// planning row) repeat the same few names.
func readMembers(d *jsontext.Decoder, names *interner, each func(name string) error) (bool, error) {
	if k := d.PeekKind(); k != '{' {
		return nullOr(d, k, "an object")
	}
	if _, err := d.ReadToken(); err != nil {
		return false, err
	}
	for {
		switch d.PeekKind() {
		case '}':
			_, err := d.ReadToken()
			return true, err
		case '"':
		default:
			_, err := d.ReadToken() // not a member name: the decoder says why
			return false, err
		}
		raw, err := d.ReadValue()
		if err != nil {
			return false, err
		}
		if err := each(names.name(raw)); err != nil {
			return false, err
		}
	}
}

// readAmounts reads a map of amounts (a name to a number). JSON null for
// the map leaves it nil (the caller decides whether that is allowed); null
// for an amount is refused: the contract's amounts are numbers, and a 0
// read from a null would be a cost nobody reported. A repeated name keeps
// its last value.
func readAmounts(d *jsontext.Decoder, out *map[string]float64, names *interner) (bool, error) {
	m := *out
	if m == nil {
		m = map[string]float64{}
	}
	ok, err := readMembers(d, names, func(name string) error {
		var x float64
		present, err := readFloat(d, &x)
		if err == nil && !present {
			return &memberError{path: path(d, ""), what: "is null"}
		}
		m[name] = x
		return err
	})
	if ok && err == nil {
		*out = m
	} else if !ok && err == nil {
		*out = nil
	}
	return ok, err
}

// readRaws reads an object of any values, kept as raw JSON.
func readRaws(d *jsontext.Decoder, out *map[string]json.RawMessage, names *interner) (bool, error) {
	m := *out
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	ok, err := readMembers(d, names, func(name string) error {
		val, err := d.ReadValue()
		m[name] = bytes.Clone(val)
		return err
	})
	if ok && err == nil {
		*out = m
	} else if !ok && err == nil {
		*out = nil
	}
	return ok, err
}

// interner hands out one string for each member name it has seen lately,
// so that maps repeating names do not make a string per name. It is a
// small direct-mapped cache: a miss costs what no cache would.
type interner [64]string

// name returns the unquoted member name raw (quoted, as in the answer).
func (in *interner) name(raw jsontext.Value) string {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') >= 0 || !utf8.Valid(inner) {
		b, _ := jsontext.AppendUnquote(nil, raw) // invalid UTF-8 is replaced, as v1 does
		return string(b)
	}
	if in == nil || len(inner) > 32 {
		return string(inner)
	}
	h := uint(len(inner))
	for _, c := range inner {
		h = h*31 + uint(c)
	}
	slot := &in[h%uint(len(in))]
	if *slot != string(inner) { // compared without a copy
		*slot = string(inner)
	}
	return *slot
}

// Value readers. Each reads one value with encoding/json's rules: a value
// of another kind is an error, and null leaves the target as it was (the
// reader then reports false).

func readString(d *jsontext.Decoder, p *string) (bool, error) {
	switch k := d.PeekKind(); k {
	case '"':
		tok, err := d.ReadToken()
		if err != nil {
			return false, err
		}
		*p = tok.String()
		return true, nil
	default:
		return nullOr(d, k, "a string")
	}
}

func readFloat(d *jsontext.Decoder, p *float64) (bool, error) {
	switch k := d.PeekKind(); k {
	case '0':
		val, err := d.ReadValue()
		if err != nil {
			return false, err
		}
		f, err := strconv.ParseFloat(string(val), 64)
		if err != nil {
			return false, &memberError{path: path(d, ""), what: "is " + string(val) + ", out of the range of a float64"}
		}
		*p = f
		return true, nil
	default:
		return nullOr(d, k, "a number")
	}
}

// readInt reads an integer: a JSON number whose value is an integer in the
// range of an int64, however it is written (12, 12.0, 1.2e1). The contract
// says "integer", and JSON has one kind of number; what matters is the
// value. A fraction, or a value out of range, is refused.
func readInt(d *jsontext.Decoder, p *int64) (bool, error) {
	return readIntIn(d, p, math.MinInt64, math.MaxInt64, "a 64-bit integer")
}

// readInt32 reads an integer as readInt does, in the range of an int32.
// The members read so (counts, periods, weekdays) reach the gateway's
// clients as GraphQL's Int, which holds 32 bits: a larger value would be
// an answer nobody could be given, so it is a malformed one here, named,
// rather than a number the GraphQL layer must not write.
func readInt32(d *jsontext.Decoder, p *int) (bool, error) {
	var n int64
	ok, err := readIntIn(d, &n, math.MinInt32, math.MaxInt32, "a 32-bit integer")
	if ok {
		*p = int(n)
	}
	return ok, err
}

// readIntIn reads an integer in [lo, hi]; within names that range.
func readIntIn(d *jsontext.Decoder, p *int64, lo, hi int64, within string) (bool, error) {
	switch k := d.PeekKind(); k {
	case '0':
		val, err := d.ReadValue()
		if err != nil {
			return false, err
		}
		n, integral, ok := intValue(val)
		switch {
		case !integral:
			return false, &memberError{path: path(d, ""), what: "is " + string(val) + ", not an integer"}
		case !ok || n < lo || n > hi:
			return false, &memberError{path: path(d, ""), what: "is " + string(val) + ", out of the range of " + within}
		}
		*p = n
		return true, nil
	default:
		return nullOr(d, k, "an integer")
	}
}

// intValue returns the value of num, a valid JSON number, when it is an
// integer: integral is false when its value has a fraction, ok false when
// it is an integer out of the range of an int64. It works on the decimal
// digits, so no value is rounded on the way (as it would be through a
// float64), and no exponent, however large, costs more than its digits.
func intValue(num []byte) (n int64, integral, ok bool) {
	neg := num[0] == '-'
	if neg {
		num = num[1:]
	}
	// num is int[.frac][e|E[sign]exp]: its value is the digits of int and
	// frac, as one integer, times 10^(exp-len(frac)).
	whole, frac, exp := num, []byte(nil), int64(0)
	if i := bytes.IndexAny(num, "eE"); i >= 0 {
		whole = num[:i]
		e := num[i+1:]
		expNeg := e[0] == '-'
		if e[0] == '-' || e[0] == '+' {
			e = e[1:]
		}
		for _, c := range e {
			exp = min(exp*10+int64(c-'0'), 1<<40) // far beyond any number's digits
		}
		if expNeg {
			exp = -exp
		}
	}
	if i := bytes.IndexByte(whole, '.'); i >= 0 {
		whole, frac = whole[:i], whole[i+1:]
	}
	digit := func(i int) byte { // the i-th of the digits of int and frac
		if i < len(whole) {
			return whole[i]
		}
		return frac[i-len(whole)]
	}
	first, end := 0, len(whole)+len(frac)
	for first < end && digit(first) == '0' {
		first++
	}
	if first == end {
		return 0, true, true // zero, however written
	}
	for digit(end-1) == '0' {
		end--
	}
	// The significant digits are digit(first…end-1), times 10^scale.
	scale := exp - int64(len(frac)) + int64(len(whole)+len(frac)-end)
	if scale < 0 {
		return 0, false, false // its last significant digit is after the point
	}
	if int64(end-first)+scale > 19 {
		return 0, true, false // more than 19 digits: beyond an int64
	}
	var u uint64 // at most 19 digits: no overflow
	for i := first; i < end; i++ {
		u = u*10 + uint64(digit(i)-'0')
	}
	for range scale {
		u *= 10
	}
	switch {
	case !neg && u > math.MaxInt64, neg && u > 1<<63:
		return 0, true, false
	case neg:
		return int64(-u), true, true // -(1<<63) wraps to math.MinInt64, as it should
	}
	return int64(u), true, true
}

func readBool(d *jsontext.Decoder, p *bool) (bool, error) {
	switch k := d.PeekKind(); k {
	case 't', 'f':
		tok, err := d.ReadToken()
		if err != nil {
			return false, err
		}
		*p = tok.Bool()
		return true, nil
	default:
		return nullOr(d, k, "a boolean")
	}
}

func readDate(d *jsontext.Decoder, p *Date) (bool, error) {
	if d.PeekKind() == '"' {
		val, err := d.ReadValue()
		if err != nil {
			return false, err
		}
		if v, ok := quickDate(val); ok {
			*p = v
			return true, nil
		}
		s, _ := jsontext.AppendUnquote(nil, val)
		v, err := ParseDate(string(s))
		if err != nil {
			return false, &memberError{path: path(d, ""), what: "is not a date: " + err.Error()}
		}
		*p = v
		return true, nil
	}
	var s string
	return readString(d, &s) // null, or the error of another kind
}

// quickDate reads "YYYY-MM-DD", quoted and without escapes, straight from
// the answer's bytes: the form of every date the contract sends, read with
// no string made. Anything else is for ParseDate to judge.
func quickDate(q []byte) (Date, bool) {
	if len(q) != 12 || q[11] != '"' {
		return Date{}, false
	}
	return ymd(q[1:11])
}

// ymd reads YYYY-MM-DD, a valid date.
func ymd(b []byte) (Date, bool) {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return Date{}, false
	}
	y, ok1 := digits(b[0:4])
	m, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || day < 1 || day > daysIn(y, time.Month(m)) {
		return Date{}, false
	}
	return Date{y, time.Month(m), day}, true
}

// quickTimestamp reads the contract's "2006-01-02T15:04:05.000Z", quoted
// and without escapes, straight from the answer's bytes. Anything else
// (another precision, an offset) is for Timestamp.UnmarshalText to judge.
func quickTimestamp(q []byte) (Timestamp, bool) {
	if len(q) != 26 || q[11] != 'T' || q[14] != ':' || q[17] != ':' || q[20] != '.' || q[24] != 'Z' || q[25] != '"' {
		return Timestamp{}, false
	}
	date, ok := ymd(q[1:11])
	h, ok1 := digits(q[12:14])
	mi, ok2 := digits(q[15:17])
	sec, ok3 := digits(q[18:20])
	ms, ok4 := digits(q[21:24])
	if !ok || !ok1 || !ok2 || !ok3 || !ok4 || h > 23 || mi > 59 || sec > 59 {
		return Timestamp{}, false
	}
	return Timestamp{time.Date(date.Year, date.Month, date.Day, h, mi, sec, ms*int(time.Millisecond), time.UTC)}, true
}

// digits reads a run of ASCII digits.
func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// daysIn returns the number of days of month m of year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func readTimestamp(d *jsontext.Decoder, p *Timestamp) (bool, error) {
	if d.PeekKind() == '"' {
		val, err := d.ReadValue()
		if err != nil {
			return false, err
		}
		if v, ok := quickTimestamp(val); ok {
			*p = v
			return true, nil
		}
		s, _ := jsontext.AppendUnquote(nil, val)
		if err := p.UnmarshalText(s); err != nil {
			return false, &memberError{path: path(d, ""), what: "is not a timestamp: " + err.Error()}
		}
		return true, nil
	}
	var s string
	return readString(d, &s) // null, or the error of another kind
}

// decodeJSON decodes data, a JSON value on its own, with decode, for the
// encoding/json UnmarshalJSON methods: the same rules as the client's.
func decodeJSON[T any](data []byte, v *T, decode func(*jsontext.Decoder, *T) error) error {
	d := jsontext.NewDecoder(bytes.NewReader(data), v1Semantics)
	if err := decode(d, v); err != nil {
		return err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return fmt.Errorf("upstream: trailing data after the JSON value")
	}
	return nil
}
