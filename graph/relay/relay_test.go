package relay_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/graph/relay"
)

var b64 = base64.RawURLEncoding

// maxInput mirrors the package's bound on what it decodes at all.
const maxInput = 1024

// fuzzSecret signs the cursors of the seed corpus of FuzzDecodeCursor, so the
// fuzzer mutates real cursors instead of guessing a MAC.
var fuzzSecret = []byte("fuzz-secret")

func TestIDRoundTrip(t *testing.T) {
	t.Parallel()
	odd := []string{"bud_1a2b", "a:b", "50%", "a b", "a+b", "x/y?z=1&w#", "ümlaut", "line\nbreak", strings.Repeat("z", 300)}
	for _, id := range odd {
		gid := relay.BudgetID(id)
		got, err := relay.ParseID(gid)
		if err != nil {
			t.Fatalf("ParseID(BudgetID(%q)): %v", id, err)
		}
		if diff := cmp.Diff(relay.ID{Type: relay.TypeBudget, Key: id, BudgetID: id}, got); diff != "" {
			t.Errorf("ParseID(BudgetID(%q)) (-want +got):\n%s", id, diff)
		}
		for _, typ := range []string{relay.TypeScheduledNotification, relay.TypeRecommendation, relay.TypeAnomaly,
			relay.TypeUser, relay.TypeExplorerReport} {
			got, err := relay.ParseID(relay.NodeID(typ, id))
			if diff := cmp.Diff(relay.ID{Type: typ, Key: id}, got); err != nil || diff != "" {
				t.Errorf("ParseID(NodeID(%s, %q)) = %v (-want +got):\n%s", typ, id, err, diff)
			}
		}
		for _, pid := range odd {
			gid := relay.PlanningID(id, pid)
			got, err := relay.ParseID(gid)
			if err != nil {
				t.Fatalf("ParseID(PlanningID(%q, %q)): %v", id, pid, err)
			}
			if diff := cmp.Diff(relay.ID{Type: relay.TypePlanning, BudgetID: id, PlanningID: pid}, got); diff != "" {
				t.Errorf("ParseID(PlanningID(%q, %q)) (-want +got):\n%s", id, pid, diff)
			}
		}
	}
	if relay.BudgetID("x") == relay.PlanningID("x", "") || relay.BudgetID("a:b") == relay.PlanningID("a", "b") {
		t.Error("a budget's ID equals a planning row's")
	}
}

func TestParseIDRejects(t *testing.T) {
	t.Parallel()
	enc := func(s string) string { return b64.EncodeToString([]byte(s)) }
	good := relay.BudgetID("b") // "Budget:b" is 8 bytes: its last character carries 4 unused bits
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"not base64", "not an id!"},
		{"standard alphabet", stdAlphabet(t)},
		{"padded", good + "="},
		{"unused bits set", good[:len(good)-1] + string(good[len(good)-1]+1)},
		{"newline inside", good[:4] + "\n" + good[4:]},
		{"carriage return at end", good + "\r"},
		{"too long", relay.BudgetID(strings.Repeat("b", maxInput))},
		{"no type", enc("bud_1")},
		{"unknown type", enc("Node:bud_1")},
		{"type in another case", enc("budget:bud_1")},
		{"empty budget id", enc("Budget:")},
		{"budget with extra part", enc("Budget:a:b")},
		{"planning without row", enc("Planning:bud_1")},
		{"planning with empty row", enc("Planning:bud_1:")},
		{"planning with empty budget", enc("Planning::pln_1")},
		{"planning with extra part", enc("Planning:a:b:c")},
		{"bad escape", enc("Budget:a%3")},
		{"escaped when it need not be", enc("Budget:%61")},
		{"unescaped space", enc("Budget:a b")},
		{"lower-case escape", enc("Budget:a%3a")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := relay.ParseID(tc.in)
			if !errors.Is(err, relay.ErrInvalidID) {
				t.Fatalf("ParseID(%q) = %+v, %v; want ErrInvalidID", tc.in, id, err)
			}
			if tc.in != "" && strings.Contains(err.Error(), tc.in) {
				t.Errorf("error %q echoes the input", err)
			}
			if id != (relay.ID{}) {
				t.Errorf("ParseID returned %+v with its error", id)
			}
		})
	}
}

// cursorSamples have upstream cursors of every length modulo 3, so their
// encodings end on every kind of base64 boundary.
var cursorSamples = []relay.Cursor{
	{},
	{Skip: 1},
	{Skip: relay.MaxSkip},
	{Upstream: "e", Skip: 127},
	{Upstream: "eyJhZnRlciI6MjR9", Skip: 128},
	{Upstream: "eyJhZnRlciI6MjR9x"},
	{Upstream: "with\x00nul and ünïcode", Skip: 3},
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	c := relay.NewCodec([]byte("secret"))
	for _, cur := range cursorSamples {
		s := c.Encode("budgets", cur)
		got, err := c.Decode("budgets", s)
		if err != nil {
			t.Fatalf("Decode(Encode(%+v)): %v", cur, err)
		}
		if diff := cmp.Diff(cur, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		if s != c.Encode("budgets", cur) {
			t.Errorf("Encode(%+v) is not deterministic", cur)
		}
	}
}

func TestCursorRejects(t *testing.T) {
	t.Parallel()
	secret := []byte("secret")
	c := relay.NewCodec(secret)
	secret[0] = 'X' // the codec keeps its own copy
	c2 := relay.NewCodec([]byte("secret"))
	for _, cur := range cursorSamples {
		s := c.Encode("budgets", cur)
		if _, err := c2.Decode("budgets", s); err != nil {
			t.Fatalf("a codec with the same secret refuses %q: %v", s, err)
		}
		bad := map[string]string{
			"empty":       "",
			"truncated":   s[:len(s)-1],
			"extended":    s + "A",
			"padded":      s + "=",
			"newline":     s[:3] + "\n" + s[3:],
			"whitespace":  " " + s,
			"cr at end":   s + "\r",
			"not base64":  s[:5] + "!" + s[6:],
			"another ID":  relay.BudgetID("bud_1"),
			"too long":    c.Encode("budgets", relay.Cursor{Upstream: strings.Repeat("u", maxInput)}),
			"skip beyond": c.Encode("budgets", relay.Cursor{Upstream: cur.Upstream, Skip: relay.MaxSkip + 1}),
		}
		// Every single-character change, including in the unused low bits of
		// the last character, is refused.
		alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		for i := range s {
			at := strings.IndexByte(alphabet, s[i])
			for _, r := range []byte{alphabet[(at+1)%64], alphabet[(at+63)%64]} {
				bad[fmt.Sprintf("char %d to %c", i, r)] = s[:i] + string(r) + s[i+1:]
			}
		}
		for name, in := range bad {
			if got, err := c.Decode("budgets", in); !errors.Is(err, relay.ErrInvalidCursor) {
				t.Errorf("%+v %s: Decode(%q) = %+v, %v; want ErrInvalidCursor", cur, name, in, got, err)
			}
		}
		if _, err := c.Decode("recommendations", s); !errors.Is(err, relay.ErrInvalidCursor) {
			t.Errorf("%+v: a budgets cursor decodes as a recommendations cursor: %v", cur, err)
		}
		if _, err := relay.NewCodec([]byte("other")).Decode("budgets", s); !errors.Is(err, relay.ErrInvalidCursor) {
			t.Errorf("%+v: a cursor decodes with another secret: %v", cur, err)
		}
		if _, err := relay.NewCodec(nil).Decode("budgets", relay.NewCodec(nil).Encode("budgets", cur)); !errors.Is(err, relay.ErrInvalidCursor) {
			t.Errorf("%+v: two codecs with random secrets share a key", cur)
		}
	}
}

// A cursor signed with the right key but of an unknown version is refused:
// the version byte is checked, not just the MAC.
func TestCursorOtherVersion(t *testing.T) {
	t.Parallel()
	secret := []byte("secret")
	sign := func(version byte) string {
		body := binary.AppendUvarint([]byte{version}, 3)
		body = append(body, "up"...)
		m := hmac.New(sha256.New, secret)
		m.Write([]byte("budgets\x00"))
		m.Write(body)
		return b64.EncodeToString(append(body, m.Sum(nil)[:16]...))
	}
	c := relay.NewCodec(secret)
	// Version 1 signed by hand must decode, or this test checks nothing.
	if got, err := c.Decode("budgets", sign(1)); err != nil || got != (relay.Cursor{Upstream: "up", Skip: 3}) {
		t.Fatalf("hand-signed version 1 cursor: %+v, %v", got, err)
	}
	for _, v := range []byte{0, 2, 255} {
		if got, err := c.Decode("budgets", sign(v)); !errors.Is(err, relay.ErrInvalidCursor) {
			t.Errorf("version %d: Decode = %+v, %v; want ErrInvalidCursor", v, got, err)
		}
	}
}

// stdAlphabet returns a valid budget ID written in the standard base64
// alphabet instead of the URL one.
func stdAlphabet(t *testing.T) string {
	for i := 0; ; i++ {
		s := relay.BudgetID(fmt.Sprintf("bud~%d~~", i))
		if strings.ContainsAny(s, "-_") {
			return strings.NewReplacer("-", "+", "_", "/").Replace(s)
		}
		if i > 1000 {
			t.Fatal("no budget ID uses - or _")
		}
	}
}

// FuzzParseID checks that ParseID never panics, refuses with ErrInvalidID,
// and accepts only IDs that this package would make: an ID that parses
// re-encodes to the same string.
func FuzzParseID(f *testing.F) {
	f.Add(relay.BudgetID("bud_8f3k2j"))
	f.Add(relay.BudgetID("b"))
	f.Add(relay.PlanningID("bud_8f3k2j", "pln_x1"))
	f.Add(relay.PlanningID("a:b", "c d%"))
	f.Add("QnVkZ2V0OmI=")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := relay.ParseID(s)
		if err != nil {
			if !errors.Is(err, relay.ErrInvalidID) {
				t.Fatalf("ParseID(%q): error %v does not wrap ErrInvalidID", s, err)
			}
			return
		}
		var again string
		switch id.Type {
		case relay.TypeBudget:
			if id.BudgetID == "" || id.PlanningID != "" {
				t.Fatalf("ParseID(%q) = %+v", s, id)
			}
			again = relay.BudgetID(id.BudgetID)
		case relay.TypePlanning:
			if id.BudgetID == "" || id.PlanningID == "" {
				t.Fatalf("ParseID(%q) = %+v", s, id)
			}
			again = relay.PlanningID(id.BudgetID, id.PlanningID)
		default:
			t.Fatalf("ParseID(%q) = %+v: unknown type", s, id)
		}
		if again != s {
			t.Fatalf("ParseID(%q) = %+v, which encodes as %q", s, id, again)
		}
	})
}

// FuzzDecodeCursor checks that Decode never panics and accepts only what
// Encode made with the same secret for the same connection, and that
// Encode→Decode is the identity for every cursor that fits the input bound.
func FuzzDecodeCursor(f *testing.F) {
	c := relay.NewCodec(fuzzSecret)
	for _, cur := range cursorSamples {
		f.Add("budgets", cur.Upstream, cur.Skip, c.Encode("budgets", cur))
	}
	f.Add("anomalies", "", -1, "")
	f.Add("", "x", relay.MaxSkip+1, "AQE")
	f.Fuzz(func(t *testing.T, conn, up string, skip int, s string) {
		other := relay.NewCodec([]byte("another secret"))

		// Arbitrary input.
		cur, err := c.Decode(conn, s)
		if err != nil {
			if !errors.Is(err, relay.ErrInvalidCursor) {
				t.Fatalf("Decode(%q, %q): error %v does not wrap ErrInvalidCursor", conn, s, err)
			}
		} else {
			if cur.Skip < 0 || cur.Skip > relay.MaxSkip {
				t.Fatalf("Decode(%q, %q) = %+v: skip out of range", conn, s, cur)
			}
			if again := c.Encode(conn, cur); again != s {
				t.Fatalf("Decode(%q, %q) = %+v, which Encode makes %q: a cursor Encode did not make decodes", conn, s, cur, again)
			}
			if _, err := c.Decode(conn+"x", s); err == nil {
				t.Fatalf("cursor %q of %q decodes for %q", s, conn, conn+"x")
			}
			if _, err := other.Decode(conn, s); err == nil {
				t.Fatalf("cursor %q decodes with another secret", s)
			}
		}

		// Round trip.
		want := relay.Cursor{Upstream: up, Skip: skip}
		enc := c.Encode(conn, want)
		got, err := c.Decode(conn, enc)
		switch {
		case skip < 0 || skip > relay.MaxSkip || len(enc) > maxInput:
			if err == nil {
				t.Fatalf("Decode(Encode(%+v)) = %+v: a cursor out of bounds decodes", want, got)
			}
		case err != nil:
			t.Fatalf("Decode(Encode(%+v)): %v", want, err)
		case got != want:
			t.Fatalf("Decode(Encode(%+v)) = %+v", want, got)
		}
		if _, err := c.Decode(conn+"x", enc); err == nil {
			t.Fatalf("cursor %q of %q decodes for %q", enc, conn, conn+"x")
		}
	})
}

// A global ID costs one allocation, its string: a page of budgets has an ID
// for each budget and each of its planning rows.
func TestIDAllocations(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = relay.PlanningID("b-1234", "p-5678") }); n != 1 {
		t.Errorf("PlanningID: %v allocations, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = relay.BudgetID("b-1234") }); n != 1 {
		t.Errorf("BudgetID: %v allocations, want 1", n)
	}
}

// An ID is the base64 of its parts joined by ':', every part written even
// when empty (as before IDs were built on the stack).
func TestIDsJoinEveryPart(t *testing.T) {
	for _, tc := range []struct{ got, raw string }{
		{relay.PlanningID("b", ""), "Planning:b:"},
		{relay.PlanningID("", "p"), "Planning::p"},
		{relay.PlanningID("b/1", strings.Repeat("p", 200)), "Planning:b%2F1:" + strings.Repeat("p", 200)},
		{relay.BudgetID(""), "Budget:"},
		{relay.NodeID(relay.TypeAnomaly, "a b"), "Anomaly:a+b"},
	} {
		if want := base64.RawURLEncoding.EncodeToString([]byte(tc.raw)); tc.got != want {
			t.Errorf("ID of %q = %s, want %s", tc.raw, tc.got, want)
		}
	}
}
