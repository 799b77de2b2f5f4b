package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The floor serves every query with the direct client's answer, and makes
// the minimum calls as the direct client does.
func TestFloorServesEveryQuery(t *testing.T) {
	s, simURL, fx := seededSim(t)
	ctx, cancel := context.WithCancel(context.Background())
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	done := make(chan error, 1)
	go func() { done <- serveFloor(ctx, addr, simURL, fx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveFloor: %v", err)
		}
	})
	if err := waitHTTPUp(ctx, "http://"+addr+"/healthz"); err != nil {
		t.Fatal(err)
	}
	f, err := newFloor("http://"+addr, 0, fx)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	for i := range queries {
		q := &queries[i]
		t.Run(q.Name, func(t *testing.T) {
			s.ResetCounts()
			a, err := answerOnce(ctx, f, q)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := q.Records(a.Data); err != nil || n == 0 {
				t.Errorf("no records (%v)", err)
			}
			if got := s.TotalCalls(); got != int64(q.minCalls()) {
				t.Errorf("%d upstream calls, want %d", got, q.minCalls())
			}
		})
	}
}

// waitHTTPUp polls url until it answers.
func waitHTTPUp(ctx context.Context, url string) error {
	p := &proc{name: "floor", done: make(chan struct{})}
	return waitHTTP(ctx, p, url, 200, 10*time.Second)
}

// goalReport is a run of two queries with the figures given per contender:
// CPU per request and requests at 50 clients, peak RSS at 200.
func goalReport(cpu map[string]time.Duration, rps map[string]int, rss int64) *report {
	r := &report{
		Queries:     []string{"BudgetList", "Overview"},
		Concurrency: []int{1, 50, 200},
		Latencies:   []time.Duration{0, 20 * time.Millisecond},
		Contenders:  []string{nameGateway, nameDirect, nameFloor, nameMesh},
	}
	for _, qn := range r.Queries {
		for _, c := range r.Contenders {
			n := rps[c]
			r.Results = append(r.Results,
				result{Contender: c, Query: qn, Concurrency: 50, Requests: n, Elapsed: time.Second, CPU: cpu[c] * time.Duration(n)},
				result{Contender: c, Query: qn, Concurrency: 200, Requests: n, Elapsed: time.Second, PeakRSS: rss})
		}
		r.Calls = append(r.Calls, callCount{qn, nameGateway, queryByName(qn).Min})
	}
	r.Results = append(r.Results,
		result{Contender: nameGateway, Query: "Overview", Concurrency: 1, Latency: 20 * time.Millisecond, Requests: 10, P50: 43 * time.Millisecond},
		result{Contender: nameDirect, Query: "Overview", Concurrency: 1, Latency: 20 * time.Millisecond, Requests: 10, P50: 42 * time.Millisecond})
	return r
}

func TestGoals13(t *testing.T) {
	for _, tc := range []struct {
		name string
		cpu  map[string]time.Duration
		rps  map[string]int
		rss  int64
		want []bool // met, in goals13's order
	}{
		{
			name: "all met",
			cpu:  map[string]time.Duration{nameGateway: 100, nameDirect: 80, nameFloor: 90, nameMesh: 400},
			rps:  map[string]int{nameGateway: 90, nameDirect: 100, nameFloor: 100, nameMesh: 30},
			rss:  50 << 20,
			want: []bool{true, true, true, true, true, true, true},
		},
		{
			name: "all missed but calls and latency",
			cpu:  map[string]time.Duration{nameGateway: 200, nameDirect: 80, nameFloor: 90, nameMesh: 400},
			rps:  map[string]int{nameGateway: 60, nameDirect: 100, nameFloor: 100, nameMesh: 30},
			rss:  150 << 20,
			want: []bool{false, false, false, false, false, true, true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := goals13(goalReport(tc.cpu, tc.rps, tc.rss))
			if len(rows) != len(tc.want) {
				t.Fatalf("%d goal rows, want %d: %+v", len(rows), len(tc.want), rows)
			}
			for i, row := range rows {
				if row.NotMeasured || row.Met != tc.want[i] {
					t.Errorf("%s: met %v (not measured %v), want %v; measured %s", row.Goal, row.Met, row.NotMeasured, tc.want[i], row.Measured)
				}
			}
		})
	}
}

// A run without Mesh, the floor or the 20 ms latency says which goals it
// has no figure for, and the report still renders.
func TestGoals13NotMeasured(t *testing.T) {
	r := goalReport(map[string]time.Duration{nameGateway: 100, nameDirect: 80}, map[string]int{nameGateway: 90, nameDirect: 100}, 50<<20)
	r.Contenders = []string{nameGateway, nameDirect}
	var kept []result
	for _, x := range r.Results {
		if (x.Contender == nameGateway || x.Contender == nameDirect) && x.Latency == 0 {
			kept = append(kept, x)
		}
	}
	r.Results, r.Latencies = kept, r.Latencies[:1]
	var unmeasured []string
	for _, row := range goals13(r) {
		if row.NotMeasured {
			unmeasured = append(unmeasured, row.Goal)
		}
	}
	if len(unmeasured) != 3 {
		t.Errorf("not measured: %q; want the Mesh, floor and latency goals", unmeasured)
	}
	if out := renderReport(r); !strings.Contains(out, "| not measured |") {
		t.Errorf("the report does not say what was not measured")
	}
}
