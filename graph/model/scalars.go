// Package model holds the GraphQL models that are not the upstream's own
// records, and the marshalers of the custom scalars.
package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/upstream"
)

// Node is the Go side of the GraphQL Node interface. Its implementors are
// the upstream records *upstream.Budget and *upstream.Planning, which know
// nothing of GraphQL, so the interface asks for no methods.
type Node any

// MarshalDate prints a Date scalar as YYYY-MM-DD.
func MarshalDate(d upstream.Date) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { _, _ = w.Write(AppendDate(buffer(w), d)) })
}

// AppendDate appends what MarshalDate writes.
func AppendDate(b []byte, d upstream.Date) []byte { return append(d.Append(append(b, '"')), '"') }

// UnmarshalDate accepts only a YYYY-MM-DD string of a real calendar date.
func UnmarshalDate(v any) (upstream.Date, error) {
	s, ok := v.(string)
	if !ok {
		return upstream.Date{}, codes.Errorf(codes.BadUserInput, "Date must be a YYYY-MM-DD string, got %s", kind(v))
	}
	d, err := upstream.ParseDate(s)
	if err != nil {
		return upstream.Date{}, codes.Errorf(codes.BadUserInput, "Date %s", strings.TrimPrefix(err.Error(), "date "))
	}
	return d, nil
}

// MarshalDateTime prints a DateTime scalar in the contract's form,
// 2006-01-02T15:04:05.000Z.
func MarshalDateTime(t upstream.Timestamp) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { _, _ = w.Write(AppendDateTime(buffer(w), t)) })
}

// AppendDateTime appends what MarshalDateTime writes.
func AppendDateTime(b []byte, t upstream.Timestamp) []byte {
	return append(t.Append(append(b, '"')), '"')
}

// MarshalString writes a String with graphql.MarshalString's escaping
// (a control character, quote or backslash escaped; everything else as it
// is), scanning bytes rather than runes, into the executor's buffer.
func MarshalString(s string) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { _, _ = w.Write(AppendString(buffer(w), s)) })
}

// UnmarshalString reads a String input as gqlgen does.
func UnmarshalString(v any) (string, error) { return graphql.UnmarshalString(v) }

// MarshalID writes an ID as MarshalString writes a String.
func MarshalID(s string) graphql.Marshaler { return MarshalString(s) }

// UnmarshalID reads an ID input as gqlgen does.
func UnmarshalID(v any) (string, error) { return graphql.UnmarshalID(v) }

const hexDigits = "0123456789ABCDEF"

// AppendString appends what MarshalString writes: s as a JSON string,
// escaped as gqlgen's graphql.MarshalString escapes it.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		case '\n':
			b = append(b, '\\', 'n')
		case '\\', '"':
			b = append(b, '\\', c)
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	return append(append(b, s[start:]...), '"')
}

// buffer is where a marshaler appends what it writes to w: the free space
// of the executor's bytes.Buffer, so that the Write that follows copies
// nothing and nothing of the marshaler's escapes to the heap; for any other
// writer, a new slice.
func buffer(w io.Writer) []byte {
	if b, ok := w.(*bytes.Buffer); ok {
		return b.AvailableBuffer()
	}
	return nil
}

// UnmarshalDateTime accepts only the contract's form: UTC, milliseconds, Z.
func UnmarshalDateTime(v any) (upstream.Timestamp, error) {
	s, ok := v.(string)
	if !ok {
		return upstream.Timestamp{}, codes.Errorf(codes.BadUserInput, "DateTime must be a string, got %s", kind(v))
	}
	return ParseDateTime(s)
}

// dateTimeForm is the date-time of the scalar's specification
// (scalars.graphql.org/andimarek/date-time): RFC 3339 with exactly three
// fraction digits and an offset, Z or ±hh:mm (t and z as RFC 3339 allows).
var dateTimeForm = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}([Zz]|[+-][0-9]{2}:[0-9]{2})$`)

// ParseDateTime parses a date-time of the scalar's specification, such as
// 2026-07-20T18:00:00.000Z or 2026-07-20T20:00:00.000+02:00, into its
// instant in UTC. The unknown-offset convention -00:00 is refused, as the
// specification asks.
func ParseDateTime(s string) (upstream.Timestamp, error) {
	bad := codes.Errorf(codes.BadUserInput, "DateTime %q is not a date-time such as 2026-07-20T18:00:00.000Z (three fraction digits and an offset)", s)
	if len(s) > 32 || !dateTimeForm.MatchString(s) || strings.HasSuffix(s, "-00:00") {
		return upstream.Timestamp{}, bad
	}
	if off := s[23:]; len(off) == 6 && (off[1:3] > "23" || off[4:6] > "59") {
		return upstream.Timestamp{}, bad // RFC 3339's offsets run to 23:59
	}
	norm := strings.ToUpper(s)
	t, err := time.Parse("2006-01-02T15:04:05.000Z07:00", norm)
	// time.Parse takes hours and minutes past their range in an offset and
	// February 30 in no case, but a day past the month's end it refuses; a
	// printed-back check keeps only what names one instant exactly.
	if err != nil || t.Format("2006-01-02T15:04:05.000Z07:00") != strings.Replace(norm, "+00:00", "Z", 1) {
		return upstream.Timestamp{}, bad
	}
	return upstream.Timestamp{Time: t.UTC()}, nil
}

// Bounds of the values of the JSON scalar.
const (
	// MaxJSONDepth bounds how deep a JSON input nests, and how deep an
	// output value may nest before it is refused for its field only. The
	// budget fields and filters the contract leaves untyped hold shallow
	// values; a value thousands deep only makes every later read fail.
	MaxJSONDepth = 32
	// MaxJSONBytes bounds one JSON input value, encoded.
	MaxJSONBytes = 64 << 10
)

// MarshalJSONValue prints a JSON scalar: raw JSON is written as it came,
// without decoding; nothing or the literal null prints null. A value nested
// deeper than MaxJSONDepth is an UPSTREAM_BAD_RESPONSE error on its field,
// whose value is then null: the rest of the answer stands.
func MarshalJSONValue(v json.RawMessage) graphql.ContextMarshaler {
	return graphql.ContextWriterFunc(func(_ context.Context, w io.Writer) error {
		if len(v) == 0 || string(v) == "null" {
			_, err := io.WriteString(w, "null")
			return err
		}
		if d := jsonDepth(v); d > MaxJSONDepth {
			return codes.Errorf(codes.UpstreamBadResponse, "the upstream sent a JSON value nested %d deep; at most %d levels are passed on", d, MaxJSONDepth)
		}
		_, err := w.Write(v)
		return err
	})
}

// UnmarshalJSONValue accepts an input value nested at most MaxJSONDepth deep
// and at most MaxJSONBytes encoded, and returns it as raw JSON. Under a
// context from WithJSONBudget the value is also charged to its request's
// budget: a request's JSON inputs together are at most MaxJSONInputBytes,
// each use counted, as each use is encoded, and sent upstream, on its own
// (one $filters given to four Explorer fields is charged four times).
//
// The value is measured before it is encoded, and the measure stops as soon
// as it is over a bound: a variable is sent once however many times the
// document names it, so `[$x, $x, …]` on a 60 KB $x stands for a value of
// gigabytes that must not be built to be refused.
func UnmarshalJSONValue(ctx context.Context, v any) (json.RawMessage, error) {
	budget, _ := ctx.Value(jsonBudgetKey{}).(*atomic.Int64)
	left := int64(MaxJSONInputBytes)
	if budget != nil {
		left = budget.Load()
	}
	switch n, deep := jsonSize(v, MaxJSONDepth, min(MaxJSONBytes, left)+1); {
	case deep:
		return nil, codes.Errorf(codes.BadUserInput, "JSON value nests deeper than %d levels", MaxJSONDepth)
	case n > MaxJSONBytes:
		return nil, codes.Errorf(codes.BadUserInput, "JSON value is more than %d bytes encoded; at most %d are allowed", MaxJSONBytes, MaxJSONBytes)
	case n > left:
		return nil, errJSONBudget
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, codes.Errorf(codes.BadUserInput, "JSON value cannot be encoded: %v", err)
	}
	if len(b) > MaxJSONBytes {
		return nil, codes.Errorf(codes.BadUserInput, "JSON value is %d bytes encoded; at most %d are allowed", len(b), MaxJSONBytes)
	}
	if budget != nil && budget.Add(-int64(len(b))) < 0 {
		return nil, errJSONBudget
	}
	return b, nil
}

// MaxJSONInputBytes bounds the JSON inputs of one request together,
// encoded: four values at MaxJSONBytes, what a createBudget or updateBudget
// with every JSON field at its bound needs.
const MaxJSONInputBytes = 4 * MaxJSONBytes

var errJSONBudget = codes.Errorf(codes.BadUserInput,
	"the JSON values of this request are more than %d bytes encoded together; at most %d are allowed", MaxJSONInputBytes, MaxJSONInputBytes)

type jsonBudgetKey struct{}

// WithJSONBudget gives a request's context the budget of its JSON inputs,
// MaxJSONInputBytes, which UnmarshalJSONValue draws on.
func WithJSONBudget(ctx context.Context) context.Context {
	b := new(atomic.Int64)
	b.Store(MaxJSONInputBytes)
	return context.WithValue(ctx, jsonBudgetKey{}, b)
}

// jsonSize measures v, a value of the JSON scalar as gqlgen gives it (the
// decoded variables, or a literal with variables in it): n is at least the
// length of its encoding without escapes, and deep reports that it nests
// more than depth levels. It stops as soon as n reaches limit or the value
// is found too deep, so it visits at most limit values, however many times
// v holds the same one.
func jsonSize(v any, depth int, limit int64) (n int64, deep bool) {
	var walk func(v any, depth int) bool // false: stop
	walk = func(v any, depth int) bool {
		switch v := v.(type) {
		case map[string]any:
			if depth == 0 {
				deep = true
				return false
			}
			n += 2
			for k, e := range v {
				n += int64(len(k)) + 4 // "k":,
				if n >= limit || !walk(e, depth-1) {
					return false
				}
			}
		case []any:
			if depth == 0 {
				deep = true
				return false
			}
			n += 2
			for _, e := range v {
				n++ // ,
				if n >= limit || !walk(e, depth-1) {
					return false
				}
			}
		case string:
			n += int64(len(v)) + 2
		case json.Number:
			n += int64(len(v))
		default:
			n++ // a number, true, false or null: one byte at least
		}
		return n < limit
	}
	walk(v, depth)
	return n, deep
}

// jsonDepth is the deepest nesting of lists and objects in valid JSON.
func jsonDepth(b []byte) int {
	depth, most, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			most = max(most, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return most
}

// MarshalInt64 prints an Int64 scalar as a string of decimal digits, which
// JavaScript clients read without the rounding a JSON number above 2^53
// would suffer.
func MarshalInt64(n int64) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { _, _ = w.Write(AppendInt64(buffer(w), n)) })
}

// AppendInt64 appends what MarshalInt64 writes: the decimal digits, quoted.
func AppendInt64(b []byte, n int64) []byte {
	return append(strconv.AppendInt(append(b, '"'), n, 10), '"')
}

// AppendInt appends what graphql.MarshalInt writes.
func AppendInt(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) }

// AppendBoolean appends what graphql.MarshalBoolean writes.
func AppendBoolean(b []byte, v bool) []byte { return strconv.AppendBool(b, v) }

// UnmarshalInt64 accepts a string of decimal digits or an integer, within
// the range of a signed 64-bit integer.
func UnmarshalInt64(v any) (int64, error) {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case json.Number:
		s = v.String()
	case int64:
		return v, nil
	case int:
		return int64(v), nil
	default:
		return 0, codes.Errorf(codes.BadUserInput, "Int64 must be a string of decimal digits, got %s", kind(v))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, codes.Errorf(codes.BadUserInput, "Int64 %q is not an integer from -9223372036854775808 to 9223372036854775807", s)
	}
	return n, nil
}

// kind names the GraphQL kind of an input value for error messages, without
// echoing the value.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	default:
		return "a number"
	}
}

// Explorer is the root of the Explorer queries; it holds nothing, and each of
// its fields is one upstream call.
type Explorer struct{}

// MarshalFloat prints a Float as a plain decimal, the shortest that reads
// back as the same number, never in exponent notation: gqlgen's %g wrote a
// budget's target of 3 432 522.36 as 3.43252236e+06.
//
// Every Float the gateway answers is finite by construction, so it is
// marshalled without a context (the executor then makes no field context
// for it, docs/performance.md): each comes from an upstream number, which
// the decoders read as finite or refuse (JSON has no NaN or infinity, and a
// number past float64's range is UPSTREAM_BAD_RESPONSE), or from the one
// sum the gateway computes, a budget's actuals total, which is checked
// where it is computed. A value that is not finite here is a bug in the
// gateway: it panics, which the handler answers as INTERNAL and logs with
// its stack, rather than writing a number that JSON cannot hold.
func MarshalFloat(f float64) graphql.Marshaler {
	CheckFloat(f)
	return graphql.WriterFunc(func(w io.Writer) { _, _ = w.Write(appendFloat(buffer(w), f)) })
}

// AppendFloat appends what MarshalFloat writes, and panics as it does.
func AppendFloat(b []byte, f float64) []byte {
	CheckFloat(f)
	return appendFloat(b, f)
}

// appendFloat appends f, which has been checked: the shortest decimal that
// reads back as f, as strconv.AppendFloat(b, f, 'f', -1, 64) writes it.
//
// Most of the gateway's Floats are amounts of money, with at most two
// decimals, and those are written without strconv's search for the
// shortest digits (a third of what writing a budget's answer cost): when
// n = f × 100 rounds to an integer of at most 15 digits with n ÷ 100 == f,
// the decimal n ÷ 100 reads back as f (float64 division rounds correctly),
// and no shorter decimal does, since two decimals of at most 15 significant
// digits never read back as the same float64. So its digits, without
// trailing zeros, are what strconv writes. TestAppendFloatIsStrconvs and
// FuzzAppendFloat hold the two to the same bytes.
func appendFloat(b []byte, f float64) []byte {
	if n, ok := cents(f); ok && f != 0 {
		return appendCents(b, n)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// cents returns f as a whole number of hundredths when it is one of at most
// 15 digits whose decimal reads back as f (appendFloat says why that is
// exact).
func cents(f float64) (int64, bool) {
	if c := f * 100; c > -1e15 && c < 1e15 {
		if n := math.Round(c); n/100 == f {
			return int64(n), true
		}
	}
	return 0, false
}

// appendCents appends n hundredths as a decimal without trailing zeros.
func appendCents(b []byte, n int64) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	b = strconv.AppendInt(b, n/100, 10)
	switch c := n % 100; {
	case c == 0:
	case c%10 == 0:
		b = append(b, '.', byte('0'+c/10))
	default:
		b = append(b, '.', byte('0'+c/10), byte('0'+c%10))
	}
	return b
}

// CheckFloat panics when f is not finite, as MarshalFloat does; the
// executor calls it when it resolves a Float that it writes later.
func CheckFloat(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		panic(fmt.Sprintf("a Float that is not finite (%v) reached the answer", f))
	}
}

// UnmarshalFloat reads a Float input as gqlgen does.
func UnmarshalFloat(v any) (float64, error) {
	return graphql.UnmarshalFloat(v)
}

// A DecimalSum adds amounts as the decimals they are, rather than as the
// float64s that hold them: its Value has the float noise of the sum
// dropped and every digit of the amounts kept.
type DecimalSum struct {
	sum    float64
	digits int // the most decimals of an amount added
}

// Add adds v.
func (s *DecimalSum) Add(v float64) {
	s.sum += v
	s.digits = max(s.digits, decimals(v))
}

// Value returns the sum: infinite when it is past float64's range.
func (s DecimalSum) Value() float64 { return roundTo(s.sum, s.digits) }

// decimals returns how many digits v has after the point, written as the
// shortest decimal that reads back as v; 2 for any of at most two, the
// amounts of money most answers hold, found without strconv's search for
// the shortest digits (as appendFloat does).
func decimals(v float64) int {
	if math.IsInf(v, 0) || math.IsNaN(v) { // no decoded amount is either
		return 0
	}
	if _, ok := cents(v); ok {
		return 2
	}
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], v, 'e', -1, 64) // d[.ddd]e±xx
	e := bytes.IndexByte(b, 'e')
	frac := 0
	if dot := bytes.IndexByte(b[:e], '.'); dot >= 0 {
		frac = e - dot - 1
	}
	exp := 0
	for _, c := range b[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if b[e+1] == '-' {
		exp = -exp
	}
	return max(frac-exp, 0)
}

// roundTo rounds a sum of decimals of at most digits decimals each to
// those digits, which is its exact value: the float noise of adding them
// goes (0.1 + 0.2 is 0.3, not 0.30000000000000004) and every digit they
// have stays (a sub-cent amount, a currency of three decimals). A sum of
// more significant digits than a float64 holds exactly is left as added.
func roundTo(sum float64, digits int) float64 {
	if digits > 15 {
		return sum
	}
	p := math.Pow10(digits) // exact: at most 10^15
	if c := sum * p; c > -1e15 && c < 1e15 {
		return math.Round(c) / p
	}
	return sum
}
