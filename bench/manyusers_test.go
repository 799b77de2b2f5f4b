package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The figures come from the answers' extensions, which the gateway writes
// last, with the cache's member only when the cache is on.
func TestReadExtensions(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         answerExt
		err          bool
	}{
		{name: "cache off",
			answer: `{"data":{"x":1},"extensions":{"cost":{"estimatedUpstreamCalls":4,"maxUpstreamCalls":500,"upstreamCalls":4}}}` + "\n",
			want:   answerExt{calls: 4}},
		{name: "cache on",
			answer: `{"data":{"x":1},"extensions":{"cache":{"hits":3,"misses":1,"ageSeconds":7,"stale":true},"cost":{"estimatedUpstreamCalls":4,"maxUpstreamCalls":null,"upstreamCalls":1}}}`,
			want:   answerExt{calls: 1, cache: true, hits: 3, misses: 1, stale: true}},
		{name: "the word in the data",
			answer: `{"data":{"name":"\"extensions\":{}"},"extensions":{"cost":{"upstreamCalls":2}}}`,
			want:   answerExt{calls: 2}},
		{name: "no extensions", answer: `{"data":{"x":1}}`, err: true},
		{name: "no cost", answer: `{"data":{},"extensions":{"cache":{"hits":1,"misses":0}}}`, err: true},
		{name: "no upstreamCalls", answer: `{"data":{},"extensions":{"cost":{"estimatedUpstreamCalls":4}}}`, err: true},
		{name: "cut off", answer: `{"data":{},"extensions":{"cost":{"upstreamCalls":4`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readExtensions([]byte(tc.answer))
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want one: %v", err, tc.err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// An answer's extensions add up when, without the cache, the page made its
// calls, and, with it, every read was a hit or a miss and each miss a call.
func TestAnswerExtProblem(t *testing.T) {
	overview, dashboard := queryByName("Overview"), queryByName("Dashboard") // 101 and 4 calls
	for _, tc := range []struct {
		name  string
		q     *query
		cache bool
		e     answerExt
		want  string // in the problem; "" for none
	}{
		{"uncached", overview, false, answerExt{calls: 101}, ""},
		{"uncached, a call short", overview, false, answerExt{calls: 100}, "100 upstream calls, the page needs 101"},
		{"uncached with a cache member", dashboard, false, answerExt{calls: 4, cache: true, misses: 4}, "extensions.cache with the cache off"},
		{"cached, all hits", overview, true, answerExt{cache: true, hits: 101}, ""},
		{"cached, some misses", dashboard, true, answerExt{calls: 2, cache: true, hits: 2, misses: 2}, ""},
		{"cached without a cache member", dashboard, true, answerExt{calls: 0}, "no extensions.cache"},
		{"cached, reads missing", dashboard, true, answerExt{cache: true, hits: 3}, "3 hits + 0 misses, the page reads 4"},
		{"cached, a call without a miss", dashboard, true, answerExt{calls: 1, cache: true, hits: 4}, "1 upstream calls for 0 misses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.e.problem(tc.q, tc.cache)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("problem %q, want %q", got, tc.want)
			}
		})
	}
}

// The goal lines divide the cached gateway's figures by the uncached one's,
// and say so when either is missing.
func TestManyUsersGoals(t *testing.T) {
	r := &manyUsersReport{Clients: 100, Latency: 20 * time.Millisecond, Results: []manyUsersResult{
		{Gateway: muUncached, UpstreamCalls: 52_500,
			Load: result{Requests: 1000, P50: 2 * time.Second, CPU: 10 * time.Second}},
		{Gateway: muCached, UpstreamCalls: 1000,
			Load: result{Requests: 20_000, P50: 100 * time.Millisecond, CPU: 20 * time.Second}},
	}}
	// Calls per page load 0.05 ÷ 52.5; p50 0.05; CPU per page load 1 ms ÷ 10 ms.
	rows := manyUsersGoals(r)
	want := []struct {
		start, measured string
		met             bool
	}{
		{"upstream calls per page load, cached ÷ uncached ≤ 0.05, 100 clients", "0.00095: cached 0.050, uncached 52.500", true},
		{"p50 latency per page load, cached ÷ uncached ≤ 0.10", "0.050: cached 100.00 ms, uncached 2000.00 ms", true},
		{"gateway CPU per page load, cached ÷ uncached ≤ 0.33", "0.100: cached 1000 CPU-µs, uncached 10000 CPU-µs", true},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		if !strings.HasPrefix(rows[i].Goal, w.start) || rows[i].Measured != w.measured || rows[i].Met != w.met || rows[i].NotMeasured {
			t.Errorf("row %d: %+v, want %q… %q met %v", i, rows[i], w.start, w.measured, w.met)
		}
	}

	r.Results[1].Load.P50 = 300 * time.Millisecond
	if rows := manyUsersGoals(r); rows[1].Met || rows[1].verdict() != "**missed**" {
		t.Errorf("p50 0.15: %+v, want missed", rows[1])
	}
	r.Results = r.Results[:1]
	for _, row := range manyUsersGoals(r) {
		if !row.NotMeasured {
			t.Errorf("without the cached gateway: %+v, want not measured", row)
		}
	}
}

// A cache's calls per page load, and their ratio, keep two significant
// digits however small.
func TestSmall(t *testing.T) {
	for x, want := range map[float64]string{0: "0.000", 52.0857: "52.086", 0.05: "0.050", 0.0099: "0.0099",
		0.001886: "0.0019", 3.62e-5: "0.000036", 1.0 / 3: "0.333"} {
		if got := small(x); got != want {
			t.Errorf("small(%v) = %q, want %q", x, got, want)
		}
	}
}

// The upstream calls of a window are the simulator's access-log lines of
// calls between the window's two offsets.
func TestCountCallLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "costsim.log")
	before := "time=1 level=INFO msg=request method=GET path=/v1/budgets operation=listBudgets status=200\n"
	in := strings.Repeat("time=2 level=INFO msg=request method=GET path=/v1/budgets/b1 operation=getBudget status=200\n", 3) +
		"time=2 level=WARN msg=\"something else\"\n"
	after := before
	if err := os.WriteFile(path, []byte(before+in+after), 0o644); err != nil {
		t.Fatal(err)
	}
	from, to := int64(len(before)), int64(len(before)+len(in))
	for _, tc := range []struct {
		name     string
		from, to int64
		want     int64
	}{
		{"the window", from, to, 3},
		{"the whole log", 0, to + int64(len(after)), 5},
		{"nothing", to, to, 0},
		{"reversed", to, from, 0},
	} {
		got, err := countCallLines(path, tc.from, tc.to)
		if err != nil || got != tc.want {
			t.Errorf("%s: %d (%v), want %d", tc.name, got, err, tc.want)
		}
	}
}

// The many users run for a minute each by default, for a second with a
// few clients in a smoke run unless told otherwise.
func TestManyUsersFlags(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.withManyUsers || c.manyUsersOnly || c.manyUsersClients != 100 || c.manyUsersDuration != time.Minute ||
		c.manyUsersRounds != 2 || c.manyUsersLatency != 20*time.Millisecond {
		t.Errorf("defaults: with %v, only %v, %d clients, %v in %d rounds at %v", c.withManyUsers, c.manyUsersOnly,
			c.manyUsersClients, c.manyUsersDuration, c.manyUsersRounds, c.manyUsersLatency)
	}
	s, err := parseFlags([]string{"-smoke"})
	if err != nil {
		t.Fatal(err)
	}
	if s.manyUsersClients != 4 || s.manyUsersDuration != time.Second || s.manyUsersRounds != 1 {
		t.Errorf("smoke: %d clients, %v in %d rounds", s.manyUsersClients, s.manyUsersDuration, s.manyUsersRounds)
	}
	g, err := parseFlags([]string{"-smoke", "-many-users", "-many-users-clients", "10", "-many-users-duration", "2s"})
	if err != nil {
		t.Fatal(err)
	}
	if !g.manyUsersOnly || g.manyUsersClients != 10 || g.manyUsersDuration != 2*time.Second {
		t.Errorf("smoke with -many-users-clients 10 -many-users-duration 2s: only %v, %d clients, %v", g.manyUsersOnly,
			g.manyUsersClients, g.manyUsersDuration)
	}
	for _, bad := range [][]string{{"-many-users-clients", "0"}, {"-many-users-duration", "0s"}, {"-many-users-rounds", "0"},
		{"-many-users-latency", "-1ms"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The section shows the goal lines and each gateway's figures, and
// nothing when the benchmark did not run.
func TestRenderManyUsers(t *testing.T) {
	var empty strings.Builder
	renderManyUsers(&empty, nil)
	if empty.Len() != 0 {
		t.Errorf("no benchmark: %q", empty.String())
	}
	r := &manyUsersReport{Clients: 100, Key: "demo-key", Pages: manyUsersPages, Latency: 20 * time.Millisecond,
		Duration: time.Minute, Rounds: 2, Gateways: manyUsersGateways,
		Results: []manyUsersResult{
			{Gateway: muUncached, UpstreamCalls: 5250, Load: result{Requests: 100, Elapsed: time.Minute, P50: time.Second}},
			{Gateway: muCached, UpstreamCalls: 50, Load: result{Requests: 1000, Elapsed: time.Minute, P50: 50 * time.Millisecond},
				Reported: answerTally{Answers: 1000, UpstreamCalls: 50, Hits: 52_450, Misses: 50}},
		},
		Checks: []answerCheck{{Gateway: muUncached, Answers: 120}, {Gateway: muCached, Answers: 1100, Inconsistent: 1, First: "Dashboard: x"}}}
	for i := range r.Results {
		r.Results[i].derive()
	}
	r.Goals = manyUsersGoals(r)
	var b strings.Builder
	renderManyUsers(&b, r)
	s := b.String()
	for _, want := range []string{
		"## Many users (issue 36)",
		"| upstream calls per page load, cached ÷ uncached ≤ 0.05, 100 clients with one key, 20ms per upstream call | 0.00095: cached 0.050, uncached 52.500 | met |",
		"| p50 latency per page load, cached ÷ uncached ≤ 0.10, 100 clients with one key, 20ms per upstream call | 0.050: cached 50.00 ms, uncached 1000.00 ms | met |",
		"| uncached | 100 | 2 | 5250 | 52.500 | 0 | – |",
		"| cached | 1000 | 17 | 50 | 0.050 | 50 | 52450 / 50 |",
		"| cached | 1100 | 1 | Dashboard: x |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the section lacks %q:\n%s", want, s)
		}
	}
	if i, j := strings.Index(s, "| goal |"), strings.Index(s, "| gateway | page loads |"); i < 0 || j < i {
		t.Errorf("the goal table is not before the figures")
	}
}
