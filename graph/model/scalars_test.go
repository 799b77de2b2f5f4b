package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/upstream"
)

func printed(m graphql.Marshaler) string {
	var b bytes.Buffer
	m.MarshalGQL(&b)
	return b.String()
}

// wantBadInput fails unless err is an input error that the presenter shows
// as BAD_USER_INPUT.
func wantBadInput(t *testing.T, in any, err error) {
	t.Helper()
	var ce *codes.Error
	if !errors.As(err, &ce) || ce.Code != codes.BadUserInput {
		t.Fatalf("%#v: error %v (%T) is not a %s error", in, err, err, codes.BadUserInput)
	}
}

// wantPrintedBack fails unless unmarshal, named name, reads each of ins and
// marshal prints it back as it was written.
func wantPrintedBack[T any](t *testing.T, name string, unmarshal func(any) (T, error), marshal func(T) graphql.Marshaler, ins []string) {
	t.Helper()
	for _, s := range ins {
		v, err := unmarshal(s)
		if err != nil {
			t.Errorf("%s(%q): %v", name, s, err)
			continue
		}
		if got, want := printed(marshal(v)), strconv.Quote(s); got != want {
			t.Errorf("%s(%q) prints %s, want %s", name, s, got, want)
		}
	}
}

// wantRefused fails unless unmarshal, named name, refuses each of ins as
// BAD_USER_INPUT.
func wantRefused[T any](t *testing.T, name string, unmarshal func(any) (T, error), ins []any) {
	t.Helper()
	for _, in := range ins {
		v, err := unmarshal(in)
		if err == nil {
			t.Errorf("%s(%#v) = %v, want an error", name, in, v)
			continue
		}
		wantBadInput(t, in, err)
	}
}

func TestDate(t *testing.T) {
	t.Parallel()
	wantPrintedBack(t, "UnmarshalDate", UnmarshalDate, MarshalDate,
		[]string{"2026-01-01", "2026-02-28", "2024-02-29", "2000-02-29", "2026-12-31", "0001-01-01", "9999-12-31"})
	if d, _ := UnmarshalDate("2026-03-09"); d != (upstream.Date{Year: 2026, Month: time.March, Day: 9}) {
		t.Errorf("UnmarshalDate(2026-03-09) = %+v", d)
	}
	wantRefused(t, "UnmarshalDate", UnmarshalDate, []any{
		"", "2026-02-30", "2025-02-29", "1900-02-29", "2026-04-31", "2026-13-01", "2026-00-10", "2026-01-00", "2026-01-32",
		"2026-1-01", "2026-01-1", "26-01-01", "02026-01-01", "2026/01/01", "20260101", "01-01-2026", "2026-01-01T00:00:00Z",
		"2026-01-01 ", " 2026-01-01", "2026-01-01\n", "2026-01-1a", "+026-01-01", "-026-01-01", "2026-+1-01", "2026-0x-01",
		"２０２６-01-01", "2026–01–01",
		20260101, int64(20260101), 2026.0, true, nil, map[string]any{"year": 2026}, []any{"2026-01-01"},
	})
}

func TestDateTime(t *testing.T) {
	t.Parallel()
	wantPrintedBack(t, "UnmarshalDateTime", UnmarshalDateTime, MarshalDateTime,
		[]string{"2026-07-20T18:00:00.000Z", "2024-02-29T23:59:59.999Z", "2026-01-01T00:00:00.001Z", "0001-01-01T00:00:00.000Z"})
	want := time.Date(2026, time.July, 20, 18, 0, 0, 250e6, time.UTC)
	for _, s := range []string{"2026-07-20T18:00:00.250Z", "2026-07-20T20:00:00.250+02:00", "2026-07-20T18:00:00.250+00:00",
		"2026-07-20t18:00:00.250z", "2026-07-20T13:30:00.250-04:30"} {
		if ts, err := UnmarshalDateTime(s); err != nil || !ts.Equal(want) || ts.Location() != time.UTC {
			t.Errorf("UnmarshalDateTime(%s) = %v, %v; want %v", s, ts.Time, err, want)
		}
	}
	wantRefused(t, "UnmarshalDateTime", UnmarshalDateTime, []any{
		"", "2026-07-20", "2026-07-20T18:00:00Z", "2026-07-20T18:00:00.0Z", "2026-07-20T18:00:00.00Z", "2026-07-20T18:00:00.0000Z",
		"2026-07-20T18:00:00.000", "2026-07-20T18:00:00.000-00:00", "2026-07-20T18:00:00.000+2:00", "2026-07-20T18:00:00.000+0200",
		"2026-07-20T18:00:00.000+24:00", "2026-07-20 18:00:00.000Z", "2026-07-20T18:00.000Z", "2026-07-20T8:00:00.0000Z",
		"2026-07-20T24:00:00.000Z", "2026-07-20T23:60:00.000Z", "2026-12-31T23:59:60.000Z", "2026-02-30T00:00:00.000Z",
		"2026-07-20T18:00:00,000Z", "2026-07-20T18:00:00.+00Z", "2026-07-20T18:00:00.-00Z", "2026-07-20T18:00:00.00aZ",
		" 2026-07-20T18:00:00.000Z", "2026-07-20T18:00:00.000Z ", "2026-07-20T18:00:00.000ZZ", "+026-07-20T18:00:00.000Z",
		1784570400000, 1784570400.0, false, nil, map[string]any{}, []any{},
	})
}

// MarshalDateTime prints any instant in UTC with exactly three fraction
// digits, truncating finer precision rather than rounding into the next ms.
func TestMarshalDateTimeNormalizes(t *testing.T) {
	t.Parallel()
	in := time.Date(2026, time.July, 20, 20, 0, 0, 999_999_999, time.FixedZone("CEST", 2*3600))
	if got, want := printed(MarshalDateTime(upstream.Timestamp{Time: in})), `"2026-07-20T18:00:00.999Z"`; got != want {
		t.Errorf("MarshalDateTime(%v) = %s, want %s", in, got, want)
	}
}

// fuzzUnmarshal fuzzes unmarshal from seeds: whatever the string, it does
// not panic, it refuses with a BAD_USER_INPUT error, and what it accepts
// passes accepted.
func fuzzUnmarshal[T any](f *testing.F, seeds []string, unmarshal func(any) (T, error), accepted func(t *testing.T, s string, v T)) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := unmarshal(s)
		if err != nil {
			wantBadInput(t, s, err)
			return
		}
		accepted(t, s, v)
	})
}

// FuzzUnmarshalDate checks that UnmarshalDate never panics, refuses with a
// BAD_USER_INPUT error, and accepts only strings it prints back identically.
func FuzzUnmarshalDate(f *testing.F) {
	seeds := []string{"2026-02-28", "2026-02-30", "2024-02-29", "0000-01-01", "2026-1-01", "+026-01-01", ""}
	fuzzUnmarshal(f, seeds, UnmarshalDate, func(t *testing.T, s string, d upstream.Date) {
		if got, want := printed(MarshalDate(d)), strconv.Quote(s); got != want {
			t.Fatalf("UnmarshalDate(%q) = %+v, which prints %s", s, d, got)
		}
	})
}

// FuzzUnmarshalDateTime checks that UnmarshalDateTime never panics, refuses
// with a BAD_USER_INPUT error, and accepts only strings it prints back
// identically.
func FuzzUnmarshalDateTime(f *testing.F) {
	seeds := []string{"2026-07-20T18:00:00.000Z", "2026-07-20T18:00:00Z", "2026-07-20T18:00:00.000+00:00", "2026-07-20T8:00:00.0000Z", ""}
	fuzzUnmarshal(f, seeds, UnmarshalDateTime, func(t *testing.T, s string, ts upstream.Timestamp) {
		// What is accepted names one instant, printed in the canonical form,
		// which reads back as the same instant.
		out, _ := strconv.Unquote(printed(MarshalDateTime(ts)))
		back, err := UnmarshalDateTime(out)
		if err != nil || !back.Equal(ts.Time) || len(out) != len("2026-07-20T18:00:00.000Z") || !strings.HasSuffix(out, "Z") {
			t.Fatalf("UnmarshalDateTime(%q) = %v, which prints %q, read back as %v, %v", s, ts.Time, out, back.Time, err)
		}
	})
}

// nested returns a JSON value nested depth deep: [[[…1…]]].
func nested(depth int) any {
	var v any = 1.0
	for range depth {
		v = []any{v}
	}
	return v
}

// JSON inputs are bounded by depth and size (a value 9 997 deep once made
// every later read of its organization fail), with a BAD_USER_INPUT error.
func TestJSONInputBounds(t *testing.T) {
	t.Parallel()
	for _, in := range []any{nil, "x", map[string]any{"a": []any{1.0, "b"}}, nested(MaxJSONDepth)} {
		if _, err := UnmarshalJSONValue(context.Background(), in); err != nil {
			t.Errorf("UnmarshalJSONValue(%.60v): %v", in, err)
		}
	}
	for _, in := range []any{nested(MaxJSONDepth + 1), nested(9997), map[string]any{"pad": strings.Repeat("x", MaxJSONBytes)}} {
		_, err := UnmarshalJSONValue(context.Background(), in)
		if err == nil {
			t.Errorf("UnmarshalJSONValue(%.60v) passed", in)
			continue
		}
		wantBadInput(t, "a hostile JSON value", err)
	}
}

// A request's JSON inputs draw on one budget, and a value that names the
// same large value many times is refused after looking at a bound's worth of
// it, not after encoding all of it.
func TestJSONInputBudget(t *testing.T) {
	t.Parallel()
	ctx := WithJSONBudget(context.Background())
	big := strings.Repeat("x", MaxJSONBytes-100)
	for i := range MaxJSONInputBytes / MaxJSONBytes {
		if _, err := UnmarshalJSONValue(ctx, big); err != nil {
			t.Fatalf("value %d of %d within the budget: %v", i+1, MaxJSONInputBytes/MaxJSONBytes, err)
		}
	}
	_, err := UnmarshalJSONValue(ctx, big)
	wantBadInput(t, "a value past the request's budget", err)
	if _, err := UnmarshalJSONValue(context.Background(), big); err != nil {
		t.Errorf("without a budget, a value within its own bound: %v", err)
	}
}

// A value named many times is refused for what it stands for, without
// building it. The test is not parallel: the allocation it reads is the
// process's, and other tests allocate while they run.
func TestJSONInputBudgetSharedValue(t *testing.T) {
	big := strings.Repeat("x", MaxJSONBytes-100)
	shared := make([]any, 2000)
	for i := range shared {
		shared[i] = big // 128 MB of JSON
	}
	var n uint64
	var err error
	func() {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = UnmarshalJSONValue(WithJSONBudget(context.Background()), map[string]any{"a": shared})
		runtime.ReadMemStats(&after)
		n = after.TotalAlloc - before.TotalAlloc
	}()
	wantBadInput(t, "a list naming one large value 2 000 times", err)
	if n > 1<<20 {
		t.Errorf("refusing it allocated %d bytes", n)
	}
}

// A JSON value from the upstream nested too deep fails its own field (the
// marshaler's error), instead of the whole response.
func TestJSONOutputBounds(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := MarshalJSONValue([]byte(`{"a":["[{\"}",1]}`)).MarshalGQLContext(context.Background(), &b); err != nil || b.String() != `{"a":["[{\"}",1]}` {
		t.Errorf("a shallow value: %q %v", b.String(), err)
	}
	deep := strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1)
	var ce *codes.Error
	if err := MarshalJSONValue([]byte(deep)).MarshalGQLContext(context.Background(), io.Discard); !errors.As(err, &ce) || ce.Code != codes.UpstreamBadResponse {
		t.Errorf("a value %d deep: %v, want an %s error", MaxJSONDepth+1, err, codes.UpstreamBadResponse)
	}
}

// Int64 is as its specification (docs/schema.md, "Int64") says.
func TestInt64(t *testing.T) {
	t.Parallel()
	for in, want := range map[any]int64{"9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63, "-42": -42,
		"+5": 5, "007": 7, json.Number("2147483648"): 1 << 31, int64(7): 7} {
		n, err := UnmarshalInt64(in)
		if err != nil || n != want {
			t.Errorf("UnmarshalInt64(%#v) = %d, %v, want %d", in, n, err, want)
		}
	}
	if got := printed(MarshalInt64(1 << 40)); got != `"1099511627776"` {
		t.Errorf("MarshalInt64 = %s", got)
	}
	for _, in := range []any{"9223372036854775808", "-9223372036854775809", "1.5", "1e3", "1_000", "", " 1", "0x10",
		json.Number("2.0"), json.Number("2e3"), true, 1.5, nil, []any{"1"}, map[string]any{}} {
		if _, err := UnmarshalInt64(in); err == nil {
			t.Errorf("UnmarshalInt64(%#v) passed", in)
		} else {
			wantBadInput(t, in, err)
		}
	}
}

// Floats print as plain decimals, never in exponent notation, and read
// back as the same number. A Float that is not finite is a bug of the
// gateway's (every source of one is checked), and panics.
func TestFloatHasNoExponent(t *testing.T) {
	t.Parallel()
	for f, want := range map[float64]string{3432522.36: "3432522.36", 1e21: "1000000000000000000000", 0.0001: "0.0001",
		-40378.49: "-40378.49", 0: "0", 12: "12"} {
		var b bytes.Buffer
		MarshalFloat(f).MarshalGQL(&b)
		if b.String() != want {
			t.Errorf("MarshalFloat(%v) = %q; want %q", f, b.String(), want)
		}
		if back, _ := strconv.ParseFloat(b.String(), 64); back != f {
			t.Errorf("%q reads back as %v, not %v", b.String(), back, f)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MarshalFloat(%v) did not panic", f)
				}
			}()
			MarshalFloat(f).MarshalGQL(io.Discard)
		}()
	}
}

// A Float is written as strconv writes the shortest decimal that reads back
// as it, whether appendFloat takes its path for amounts of money or not.
func TestAppendFloatIsStrconvs(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{0, math.Copysign(0, -1), 0.01, -0.01, 0.1, 0.29, 1.005, 12, 12.5, 12.05, -40378.49,
		3432522.36, 534948.36, 9999999999999.99, 99999999999999.9, 999999999999999, 1e15, 1e21, 1e-7, 0.125,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 1 << 53, 0.1 + 0.2, 100.0 / 3} {
		checkAppendFloat(t, f)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		// Amounts of money, near the edges of the fast path, and any bits.
		checkAppendFloat(t, float64(r.Int64N(2e15)-1e15)/100)
		checkAppendFloat(t, float64(r.Int64N(2e6)-1e6)/100*math.Pow(10, float64(r.IntN(30)-15)))
		checkAppendFloat(t, math.Float64frombits(r.Uint64()))
	}
}

func FuzzAppendFloat(f *testing.F) {
	f.Add(3432522.36)
	f.Add(-0.05)
	f.Add(1e15 / 100)
	f.Fuzz(checkAppendFloat)
}

func checkAppendFloat(t *testing.T, f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return
	}
	if got, want := appendFloat(nil, f), strconv.AppendFloat(nil, f, 'f', -1, 64); string(got) != string(want) {
		t.Fatalf("appendFloat(%v) = %s, strconv writes %s", f, got, want)
	}
}

// MarshalString writes what gqlgen's graphql.MarshalString writes, byte
// for byte, into a bytes.Buffer (the executor's) or any other writer.
func TestMarshalStringIsGqlgens(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "tab\tcr\rnl\n", "\x00\x01\x1f\x7f",
		"é ü 日本 \u2028", "bad \xff\xfe utf-8", "ends with \\"} {
		checkMarshalString(t, s)
	}
}

func FuzzMarshalString(f *testing.F) {
	f.Add("plain")
	f.Add("\"\\\x00\n\xff")
	f.Fuzz(checkMarshalString)
}

func checkMarshalString(t *testing.T, s string) {
	var want, got bytes.Buffer
	graphql.MarshalString(s).MarshalGQL(&want)
	MarshalString(s).MarshalGQL(&got)
	var other strings.Builder
	MarshalString(s).MarshalGQL(&other)
	if got.String() != want.String() || other.String() != want.String() {
		t.Errorf("MarshalString(%q) = %q (into a strings.Builder %q), gqlgen's %q", s, got.String(), other.String(), want.String())
	}
}

// Each Append function appends exactly what its marshaler writes: the
// executor writes a record leaf with the one (internal/gqlgen's appenders)
// and any other with the other.
func TestAppendersWriteWhatMarshalersWrite(t *testing.T) {
	t.Parallel()
	check := func(name string, m graphql.Marshaler, appended []byte) {
		t.Helper()
		var b bytes.Buffer
		m.MarshalGQL(&b)
		if b.String() != string(appended) {
			t.Errorf("%s: the marshaler writes %q, the appender %q", name, b.String(), appended)
		}
	}
	for _, s := range []string{"", "a \"b\" \\ \n\x01 é"} {
		check("String", MarshalString(s), AppendString(nil, s))
		check("ID", MarshalID(s), AppendString(nil, s))
	}
	for _, f := range []float64{0, -1.5, 3432522.36, 1e21, 1e-7} {
		check("Float", MarshalFloat(f), AppendFloat(nil, f))
	}
	for _, d := range []upstream.Date{{Year: 2026, Month: 2, Day: 28}, {}} {
		check("Date", MarshalDate(d), AppendDate(nil, d))
	}
	ts := upstream.Timestamp{Time: time.Date(2026, 11, 25, 21, 40, 5, 123456789, time.FixedZone("x", 3600))}
	check("DateTime", MarshalDateTime(ts), AppendDateTime(nil, ts))
	for _, n := range []int64{0, -42, math.MaxInt64, math.MinInt64} {
		check("Int64", MarshalInt64(n), AppendInt64(nil, n))
		check("Int", graphql.MarshalInt(int(n)), AppendInt(nil, int(n)))
	}
	for _, v := range []bool{true, false} {
		check("Boolean", graphql.MarshalBoolean(v), AppendBoolean(nil, v))
	}
}

// Each enum appends what it marshals, for every upstream string it knows
// in any case and for one it does not, and its exported functions are bound
// to it.
func TestEnumAppendersWriteWhatMarshalersWrite(t *testing.T) {
	t.Parallel()
	for _, e := range Enums {
		vs := []string{"not a value", ""}
		for _, up := range e.Values {
			vs = append(vs, up, strings.ToUpper(up), strings.ToLower(up))
		}
		for _, v := range vs {
			var b bytes.Buffer
			e.marshal(v).MarshalGQL(&b)
			if got := string(e.append([]byte("x"), v)); got != "x"+b.String() {
				t.Errorf("%s %q: the marshaler writes %q, the appender %q", e.Name, v, b.String(), got)
			}
		}
	}
	for _, c := range []struct {
		got  []byte
		want string
	}{
		{AppendImplementationEffort(nil, "medium"), `"MEDIUM"`},
		{AppendDetectionSource(nil, "AWS"), `"AWS"`},
		{AppendBudgetStatus(nil, "Active"), `"ACTIVE"`},
		{AppendNotificationStatus(nil, "bounced"), `"UNKNOWN"`},
	} {
		if string(c.got) != c.want {
			t.Errorf("appended %s, want %s", c.got, c.want)
		}
	}
}
