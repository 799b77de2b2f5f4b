package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/lexer"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/costgw/gateway/graph"
)

func testTarget(t *testing.T) *hostileTarget {
	t.Helper()
	schema, err := loadSchema("../graph")
	if err != nil {
		t.Fatal(err)
	}
	tg := &hostileTarget{url: "http://127.0.0.1:1/graphql", budgetID: "QnVkZ2V0OmJ1ZF8x", explorerReportID: "rep_1",
		random: newDocGen(schema, 14, []string{"QnVkZ2V0OmJ1ZF8x"}).documents(8)}
	tg.prepare()
	return tg
}

// tokens counts the lexical tokens of a document, as the limit does.
func tokens(t *testing.T, doc string) int {
	t.Helper()
	lx := lexer.New(&ast.Source{Input: doc})
	n := 0
	for {
		tok, err := lx.ReadToken()
		if err != nil {
			t.Fatal(err)
		}
		if tok.Kind == lexer.EOF {
			return n
		}
		n++
	}
}

// Each shape is what issue 14 describes, and sizes sit where they must
// against the gateway's defaults.
func TestHostileShapesAreWhatTheIssueSays(t *testing.T) {
	doc, err := parser.ParseQuery(&ast.Source{Input: fragmentFanout()})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(doc.Fragments); n != 26 {
		t.Errorf("fragment fan-out: %d fragments, want 26", n)
	}
	for i, f := range doc.Fragments[:25] {
		if len(f.SelectionSet) != 2 {
			t.Errorf("fragment %d spreads %d times, want the next one twice", i, len(f.SelectionSet))
		}
	}
	if n := tokens(t, typenames(15_000)); n != 15_002 {
		t.Errorf("15 000 __typename: %d tokens", n)
	}
	if n := tokens(t, typenames(maxTokenTypenames)); n != 15_000 {
		t.Errorf("the token-limit document has %d tokens, want exactly 15 000", n)
	}
	var v any
	if err := json.Unmarshal(deepJSON(deepJSONDepth), &v); err != nil {
		t.Errorf("the deep JSON value does not decode: %v", err)
	}

	tg := testTarget(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		least, most int
		validJSON   bool
	}{
		{"comment-padded", 1_800_000, 2_000_000, true},
		{"http-1.9MB-body", 1_800_000, 2_000_000, false},
		{"comment-padded-at-limit", graph.DefaultMaxBodyBytes - 1, graph.DefaultMaxBodyBytes - 1, true},
		{"http-body-at-limit", graph.DefaultMaxBodyBytes - 1, graph.DefaultMaxBodyBytes - 1, false},
	} {
		req, err := shapeByName(tc.name).newRequest(ctx, tg, 7, withKey)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(req.Body)
		if int64(len(body)) != req.ContentLength || len(body) < tc.least || len(body) > tc.most {
			t.Errorf("%s: %d bytes (Content-Length %d), want %d to %d", tc.name, len(body), req.ContentLength, tc.least, tc.most)
		}
		if valid := json.Valid(body); valid != tc.validJSON {
			t.Errorf("%s: valid JSON %v", tc.name, valid)
		}
	}
	a, _ := shapeByName("comment-padded").newRequest(ctx, tg, 1, withKey)
	b, _ := shapeByName("comment-padded").newRequest(ctx, tg, 2, withKey)
	ab, _ := io.ReadAll(a.Body)
	bb, _ := io.ReadAll(b.Body)
	if string(ab) == string(bb) {
		t.Error("two comment-padded documents are the same; each must be new to the query cache")
	}
}

// Every shape makes its requests with each of its key variants, and only
// the attackers' variant carries the attackers' key.
func TestHostileShapesMakeTheirRequests(t *testing.T) {
	tg := testTarget(t)
	for i := range hostileShapes {
		s := &hostileShapes[i]
		if s.Name == "" || s.Title == "" || s.Item == "" || len(s.Keys) == 0 || (s.body == nil) == (s.request == nil) {
			t.Errorf("%s: incomplete definition", s.Name)
		}
		for _, k := range s.Keys {
			req, err := s.newRequest(context.Background(), tg, 3, k)
			if err != nil {
				t.Errorf("%s, %s: %v", s.Name, k, err)
				continue
			}
			auth := req.Header.Values("Authorization")
			hasAttackKey := len(auth) > 0 && auth[0] == "Bearer "+attackKey
			if hasAttackKey != (k == withKey) || (k == withoutKey && len(auth) > 0) {
				t.Errorf("%s, %s: Authorization %q", s.Name, k, auth)
			}
		}
	}
}

// The random documents use every feature they promise, are the same for
// the same seed, and are a mix of valid documents and invalid ones.
func TestRandomDocuments(t *testing.T) {
	schema, err := loadSchema("../graph")
	if err != nil {
		t.Fatal(err)
	}
	docs := newDocGen(schema, 14, []string{"QnVkZ2V0OmJ1ZF8x"}).documents(300)
	again := newDocGen(schema, 14, []string{"QnVkZ2V0OmJ1ZF8x"}).documents(300)
	for i := range docs {
		if docs[i].query != again[i].query {
			t.Fatalf("document %d differs for the same seed", i)
		}
	}
	want := []string{"alias", "fragment", "inline fragment", "include", "skip", "variable", "mutation"}
	if got := docFeatures(docs); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("features used: %v, want %v", got, want)
	}
	valid := 0
	for _, d := range docs {
		if _, errs := gqlparser.LoadQuery(schema, d.query); errs == nil {
			valid++
		}
	}
	if valid < len(docs)/5 || valid > len(docs)*19/20 {
		t.Errorf("%d of %d documents are valid; want a mix", valid, len(docs))
	}
	t.Logf("%d of %d random documents are valid", valid, len(docs))
}

func TestStatusOf(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{200, `{"data":{"x":1}}`, "200 data"},
		{200, `{"errors":[{"message":"m","extensions":{"code":"MAX_TOKENS_LIMIT"}}]}`, "200 MAX_TOKENS_LIMIT"},
		{400, `{"errors":[{"message":"m"}]}`, "400"},
		{413, `{"errors":[{"message":"m","extensions":{"code":"REQUEST_TOO_LARGE"}}]}`, "413 REQUEST_TOO_LARGE"},
	} {
		if got := statusOf(tc.status, []byte(tc.body)); got != tc.want {
			t.Errorf("statusOf(%d, %s) = %q, want %q", tc.status, tc.body, got, tc.want)
		}
	}
}

// The goal lines read the phases as documented: CPU net of the legitimate
// traffic per answer, every request answered, RSS and the legitimate
// throughput against the quiet runs.
func TestHostileGoals(t *testing.T) {
	quiet := hostilePhase{Name: "quiet", Kind: phaseQuiet, Window: time.Second, LegitOK: 1000, GatewayCPU: time.Second}
	cheap := hostilePhase{Name: "cheap", Kind: phaseShape, Window: time.Second, LegitOK: 950, GatewayCPU: 950*time.Millisecond + 100*time.Millisecond,
		PeakRSS: 50 << 20, Hostile: map[string]*shapeStats{"cheap": {Sent: 100, AnsweredWithKey: 50, AnsweredWithoutKey: 50}}}
	hung := hostilePhase{Name: "hung", Kind: phaseShape, Window: time.Second, LegitOK: 10, GatewayCPU: 2 * time.Second,
		PeakRSS: 400 << 20, Hostile: map[string]*shapeStats{"hung": {Sent: 50, TimedOut: 50}}}
	r := &hostileReport{Attackers: 50, Phases: []hostilePhase{quiet, cheap, quiet}}
	for _, row := range hostileGoals(r) {
		if !row.Met {
			t.Errorf("cheap shape only: %s missed: %s", row.Goal, row.Measured)
		}
	}
	r.Phases = []hostilePhase{quiet, cheap, hung, quiet}
	for _, row := range hostileGoals(r) {
		if row.Met || !strings.Contains(row.Measured, "hung") {
			t.Errorf("with a hung shape: %s met (%s)", row.Goal, row.Measured)
		}
	}
	if per, ok := r.cpuPerAnswer(&r.Phases[1]); !ok || per != time.Millisecond {
		t.Errorf("net CPU per answer of the cheap shape %v, want 1ms", per)
	}
	// With the attack measured alone, CPU per answer is read from it, and a
	// shape that costs more than the goal there misses it.
	dear := cheap
	dear.Name, dear.Alone = "dear", &aloneWindow{Window: time.Second, GatewayCPU: 600 * time.Millisecond, Answered: 100}
	dear.Hostile = map[string]*shapeStats{"dear": {Sent: 100, AnsweredWithKey: 100}}
	r.Phases = []hostilePhase{quiet, dear, quiet}
	if per, ok := r.cpuPerAnswer(&r.Phases[1]); !ok || per != 6*time.Millisecond {
		t.Errorf("CPU per answer of the attack alone %v, want 6ms", per)
	}
	if row := hostileGoals(r)[0]; row.Met || !strings.Contains(row.Measured, "dear") {
		t.Errorf("a shape at 6 ms alone: %s met (%s)", row.Goal, row.Measured)
	}
}

// Each attack is measured against the quiet runs beside it: on a machine
// whose speed drifts over the run, the mean of the first and last quiet
// runs put every attack short of the goal, or past it, by the drift alone.
func TestHostileQuietBeside(t *testing.T) {
	quiet := func(ok int) hostilePhase {
		return hostilePhase{Name: "quiet", Kind: phaseQuiet, Window: time.Second, LegitOK: ok}
	}
	attack := func(name string, ok int) hostilePhase {
		return hostilePhase{Name: name, Kind: phaseShape, Window: time.Second, LegitOK: ok,
			Hostile: map[string]*shapeStats{name: {Sent: 10, AnsweredWithKey: 10}}}
	}
	// The machine slows from 2000 to 1000 legitimate requests a second
	// during the first attack; neither attack costs anything.
	r := &hostileReport{Attackers: 1, Phases: []hostilePhase{
		quiet(2000), attack("a", 1500), quiet(1000), attack("b", 1000), quiet(1000)}}
	if !r.interleaved() {
		t.Fatal("a quiet run after each attack, not read as interleaved")
	}
	if q := r.quietBeside(1); q != 1500 {
		t.Errorf("beside a: %v, want 1500, the mean of the runs before and after", q)
	}
	if q := r.quietBeside(3); q != 1000 {
		t.Errorf("beside b: %v, want 1000", q)
	}
	row := hostileGoals(r)[2]
	if !row.Met || !strings.Contains(row.Goal, "beside each attack") {
		t.Errorf("%s: %v (%s); want met: b had 1000 of the 1000 beside it, 0.67 only of the mean of the ends", row.Goal, row.Met, row.Measured)
	}
	// Before interleaving: the mean of the two ends for every attack.
	old := &hostileReport{Attackers: 1, Phases: []hostilePhase{quiet(2000), attack("a", 1500), attack("b", 1500), quiet(1000)}}
	if old.interleaved() || old.quietBeside(1) != 1500 || old.quietBeside(2) != 1500 {
		t.Errorf("a report of the ends only: interleaved %v, beside a %v, beside b %v; want false, 1500, 1500",
			old.interleaved(), old.quietBeside(1), old.quietBeside(2))
	}
}
