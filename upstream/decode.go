package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"strings"
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

// rowReader reads the rows of one history answer. The rows share blocks
// of columns and of values, and the interner's names: every row has the
// same columns.
type rowReader struct {
	names  interner
	values arena
	cols   []HistoryColumn // the block the next row's columns go to
}

// columnBlock is how many columns a block of a rowReader holds.
const columnBlock = 256

// read reads one row into row: a JSON object of any values, each kept as
// raw JSON. JSON null reads nothing and reports false.
func (rr *rowReader) read(d *jsontext.Decoder, row *HistoryRow) (bool, error) {
	start := len(rr.cols)
	ok, err := readMembers(d, &rr.names, func(name string) error {
		val, err := d.ReadValue()
		if err != nil {
			return err
		}
		if len(rr.cols) == cap(rr.cols) {
			// A new block, which takes the row's columns so far: a row's
			// columns stay in one block.
			n := len(rr.cols) - start
			block := make([]HistoryColumn, n, max(columnBlock, 2*n))
			copy(block, rr.cols[start:])
			rr.cols, start = block, 0
		}
		rr.cols = append(rr.cols, HistoryColumn{name, rr.values.clone(val)})
		return nil
	})
	if !ok || err != nil {
		rr.cols = rr.cols[:start]
		*row = nil
		return ok, err
	}
	*row = rr.cols[start:len(rr.cols):len(rr.cols)]
	return true, nil
}

// arena copies the raw values of one answer into shared blocks: the many
// small values of a list of rows cost an allocation a block, not one each.
// A value keeps its whole block alive, which the rows of one answer share.
type arena []byte

// arenaBlock is the size of an arena's blocks; a larger value gets a block
// of its own.
const arenaBlock = 8 << 10

// clone returns a copy of v, capped so that appending to it cannot reach
// the next value's bytes.
func (a *arena) clone(v []byte) json.RawMessage {
	if len(v) > cap(*a)-len(*a) {
		*a = make([]byte, 0, max(arenaBlock, len(v)))
	}
	n := len(*a)
	*a = append(*a, v...)
	return json.RawMessage((*a)[n:len(*a):len(*a)])
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
