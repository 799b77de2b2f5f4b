package main

import (
	"slices"
	"testing"
	"time"
)

// A smoke run has few clients unless told otherwise, so that its warm-up,
// which waits for every client's first answer, stays short on the slowest
// contender.
func TestSmokeHasFewClients(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []int
	}{
		{[]string{"-smoke"}, []int{1, 8}},
		{[]string{"-smoke", "-concurrency", "1,50,200"}, []int{1, 50, 200}},
		{nil, []int{1, 50, 200}},
	} {
		c, err := parseFlags(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.concurrency, tc.want) {
			t.Errorf("parseFlags(%q): clients %v, want %v", tc.args, c.concurrency, tc.want)
		}
	}
}

// The telemetry-overhead benchmark runs at 50 clients for long enough to
// tell 5 % apart, and for a moment with few clients in a smoke run.
func TestOverheadFlags(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.withOverhead || c.overheadOnly || c.overheadClients != 50 || c.overheadRounds < 2 ||
		!slices.Equal(c.overheadQueries, []string{"BudgetList", "Dashboard"}) {
		t.Errorf("defaults: with %v, only %v, %d clients, %d rounds, queries %v", c.withOverhead, c.overheadOnly,
			c.overheadClients, c.overheadRounds, c.overheadQueries)
	}
	s, err := parseFlags([]string{"-smoke"})
	if err != nil {
		t.Fatal(err)
	}
	if s.overheadClients != 8 || s.overheadRounds != 1 || s.overheadDuration >= c.overheadDuration {
		t.Errorf("smoke: %d clients, %d rounds, %v", s.overheadClients, s.overheadRounds, s.overheadDuration)
	}
	if _, err := parseFlags([]string{"-overhead-queries", "Nope"}); err == nil {
		t.Error("-overhead-queries Nope: no error")
	}
}

// The critical-path runs at the latencies after the first give their
// one-client median from four times the answers of a throughput run, in
// more rounds; a smoke run gives them a moment like the others.
func TestPathFlags(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.pathDur < 4*c.duration || c.pathRounds <= c.rounds {
		t.Errorf("defaults: critical path %v in %d rounds, throughput %v in %d", c.pathDur, c.pathRounds, c.duration, c.rounds)
	}
	s, err := parseFlags([]string{"-smoke"})
	if err != nil {
		t.Fatal(err)
	}
	if s.pathDur != s.duration || s.pathRounds != s.rounds {
		t.Errorf("smoke: critical path %v in %d rounds, throughput %v in %d", s.pathDur, s.pathRounds, s.duration, s.rounds)
	}
	g, err := parseFlags([]string{"-smoke", "-path-duration", "3s", "-path-rounds", "2"})
	if err != nil {
		t.Fatal(err)
	}
	if g.pathDur != 3*time.Second || g.pathRounds != 2 {
		t.Errorf("smoke with -path-duration 3s -path-rounds 2: %v in %d rounds", g.pathDur, g.pathRounds)
	}
	for _, bad := range [][]string{{"-path-rounds", "0"}, {"-path-duration", "0s"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
