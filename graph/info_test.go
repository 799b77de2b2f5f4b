package graph

import "testing"

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
