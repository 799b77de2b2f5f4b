package graph

import (
	"encoding/json"
	"testing"

	"github.com/costgw/gateway/graph/codes"
)

// An answer has data when a root field is not null.
func TestHasRootValue(t *testing.T) {
	t.Parallel()
	for data, want := range map[string]bool{
		``:                             false,
		`null`:                         false,
		`{}`:                           false,
		`{"budget":null}`:              false,
		`{"a":null,"b":null}`:          false,
		`{"a":null,"b":{"name":"x"}}`:  true,
		`{"a":[],"b":null}`:            true,
		`{"a":0}`:                      true,
		`{"a":{"deep":null},"b":null}`: true,
		`[1]`:                          false,
	} {
		if got := hasRootValue([]byte(data)); got != want {
			t.Errorf("hasRootValue(%s) = %v, want %v", data, got, want)
		}
	}
}

// The cost extension is written by hand (costInfo.appendJSON): it is what
// encoding/json writes for the same members as a map, null for no bound.
func TestCostInfoJSON(t *testing.T) {
	for _, c := range []costInfo{{}, {estimated: 3, max: 500, calls: 2}, {estimated: 51, calls: 101}} {
		var max any
		if c.max > 0 {
			max = c.max
		}
		want, err := json.Marshal(map[string]any{"cost": map[string]any{
			"estimatedUpstreamCalls": c.estimated, "upstreamCalls": c.calls, "maxUpstreamCalls": max}})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(append(c.appendJSON([]byte(`{"cost":`)), '}')); got != string(want) {
			t.Errorf("%+v: %s, want %s", c, got, want)
		}
		if got, _ := json.Marshal(map[string]any{"cost": c}); string(got) != string(want) {
			t.Errorf("%+v marshalled: %s, want %s", c, got, want)
		}
	}
}

// A 429 is a refusal for pacing only when it is the caller's fault alone
// (its bodies past MaxCallerBodyBytes), not the rate limit's.
func TestRefusedCountsACallersFault(t *testing.T) {
	t.Parallel()
	limited := &Info{}
	limited.AnsweredWith(codes.RateLimited)
	if limited.BlamesCaller() {
		t.Error("a 429 of the rate limit counts as a refusal for pacing")
	}
	bodies := &Info{}
	bodies.blameCaller()
	bodies.AnsweredWith(codes.RateLimited)
	if !bodies.BlamesCaller() {
		t.Error("a 429 for the caller's bodies does not count as a refusal for pacing")
	}
}
