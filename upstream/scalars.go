package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Date is a calendar date, written YYYY-MM-DD on the wire.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

const dateLayout = "2006-01-02"

// ParseDate parses exactly YYYY-MM-DD and rejects impossible dates such as
// 2026-02-30.
func ParseDate(s string) (Date, error) {
	if len(s) != len(dateLayout) {
		return Date{}, fmt.Errorf("date %q is not YYYY-MM-DD", s)
	}
	t, err := time.Parse(dateLayout, s)
	if err != nil {
		return Date{}, fmt.Errorf("date %q is not a valid YYYY-MM-DD date", s)
	}
	return DateOf(t), nil
}

// DateOf returns the date of t in t's location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date{y, m, d}
}

// Time returns midnight UTC of the date.
func (d Date) Time() time.Time { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC) }

// IsZero reports whether d is the zero Date.
func (d Date) IsZero() bool { return d == Date{} }

// String formats the date as YYYY-MM-DD.
func (d Date) String() string { return string(d.Append(nil)) }

// Append appends the date as YYYY-MM-DD to b: String without a string.
func (d Date) Append(b []byte) []byte {
	if d.Year < 0 || d.Year > 9999 || d.Month < 1 || d.Month > 12 || d.Day < 1 || d.Day > 99 {
		return fmt.Appendf(b, "%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
	}
	y, m := d.Year, int(d.Month)
	return append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+m/10), byte('0'+m%10), '-', byte('0'+d.Day/10), byte('0'+d.Day%10))
}

// MarshalText implements encoding.TextMarshaler.
func (d Date) MarshalText() ([]byte, error) { return d.Append(nil), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseDate's rules.
func (d *Date) UnmarshalText(b []byte) error {
	v, err := ParseDate(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// TimestampLayout is the contract's timestamp form: UTC with milliseconds and a trailing Z.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// Timestamp is an instant, written in TimestampLayout on the wire. Decoding
// accepts any RFC 3339 form, so a harmless variation upstream does not fail a
// whole page; a leap second reads as the second after it (UnmarshalText).
type Timestamp struct{ time.Time }

// String formats the timestamp in TimestampLayout.
func (t Timestamp) String() string { return t.UTC().Format(TimestampLayout) }

// Append appends the timestamp in TimestampLayout to b.
func (t Timestamp) Append(b []byte) []byte { return t.UTC().AppendFormat(b, TimestampLayout) }

// MarshalText implements encoding.TextMarshaler.
func (t Timestamp) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// MarshalJSON implements json.Marshaler. It is needed because the embedded
// time.Time's MarshalJSON would otherwise win over MarshalText and write
// RFC 3339 without the fixed milliseconds.
func (t Timestamp) MarshalJSON() ([]byte, error) { return []byte(`"` + t.String() + `"`), nil }

// UnmarshalJSON implements json.Unmarshaler with UnmarshalText's rules (the
// embedded time.Time's UnmarshalJSON would keep the offset instead of UTC).
// JSON null leaves t unchanged.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("timestamp %s is not a JSON string", b)
	}
	return t.UnmarshalText([]byte(s))
}

// UnmarshalText implements encoding.TextUnmarshaler. A leap second
// (23:59:60 in UTC, valid RFC 3339), which time.Time cannot hold, is read
// as the second after it, the first of the next day, as most systems
// read it; second 60 of any other minute is refused.
func (t *Timestamp) UnmarshalText(b []byte) error {
	v, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		v, err = leapSecond(b)
	}
	if err != nil {
		return fmt.Errorf("timestamp %q is not RFC 3339", b)
	}
	t.Time = v.UTC()
	return nil
}

// leapSecond reads b, an RFC 3339 timestamp whose second is 60, as the
// second after second 59 of its minute, when that minute is the last of a
// UTC day.
func leapSecond(b []byte) (time.Time, error) {
	const at = len("2006-01-02T15:04:") // where the seconds are
	if len(b) < at+2 || b[at] != '6' || b[at+1] != '0' {
		return time.Time{}, errors.New("not a leap second")
	}
	s := bytes.Clone(b)
	s[at], s[at+1] = '5', '9' // second 59, then one more
	v, err := time.Parse(time.RFC3339Nano, string(s))
	if err != nil {
		return time.Time{}, err
	}
	if u := v.UTC(); u.Hour() != 23 || u.Minute() != 59 {
		return time.Time{}, errors.New("second 60 outside the last minute of a UTC day")
	}
	return v.Add(time.Second), nil
}

// Nullable is a field of a partial update that can be left out, set to null,
// or set to a value. The zero value is left out (with the omitzero tag option).
type Nullable[T any] struct {
	value T
	set   bool
	null  bool
}

// Set returns a Nullable holding v.
func Set[T any](v T) Nullable[T] { return Nullable[T]{value: v, set: true} }

// Null returns a Nullable that is sent as JSON null.
func Null[T any]() Nullable[T] { return Nullable[T]{set: true, null: true} }

// IsZero reports whether the field is left out.
func (n Nullable[T]) IsZero() bool { return !n.set }

// Get returns the value and whether there is one (false when left out or null).
func (n Nullable[T]) Get() (T, bool) { return n.value, n.set && !n.null }

// IsNull reports whether the field is set to null.
func (n Nullable[T]) IsNull() bool { return n.set && n.null }

// MarshalJSON implements json.Marshaler.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if !n.set || n.null {
		return []byte("null"), nil
	}
	return json.Marshal(n.value)
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	*n = Nullable[T]{set: true}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		n.null = true
		return nil
	}
	return json.Unmarshal(b, &n.value)
}

// joinOpen encodes known and adds the extra members; known members win.
func joinOpen(known any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(known)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for k, v := range extra {
		if _, ok := all[k]; !ok {
			all[k] = v
		}
	}
	return json.Marshal(all)
}
