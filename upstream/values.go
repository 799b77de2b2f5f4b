package upstream

import (
	"bytes"
	"math"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// The value readers of the records' decoders (decode.go). Each reads one
// value with encoding/json's rules: a value of another kind is an error, and
// null leaves the target as it was (the reader then reports false).

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
