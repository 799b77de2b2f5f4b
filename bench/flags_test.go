package main

import (
	"slices"
	"testing"
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
