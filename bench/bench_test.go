package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
)

// The in-process benchmarks: each query through the gateway's real handler
// (middleware, loaders, resolvers) on the simulator behind httptest, and the
// same work done by the direct client. Both include the simulator's
// allocations, since it runs in the same process; the difference between the
// two is what the gateway itself costs.
//
//	go test -run '^$' -bench BenchmarkQuery -benchmem ./bench

func BenchmarkQueryBudgetList(b *testing.B)      { benchQuery(b, "BudgetList") }
func BenchmarkQueryBudgetDetail(b *testing.B)    { benchQuery(b, "BudgetDetail") }
func BenchmarkQueryOverview(b *testing.B)        { benchQuery(b, "Overview") }
func BenchmarkQueryDashboard(b *testing.B)       { benchQuery(b, "Dashboard") }
func BenchmarkQueryRecommendations(b *testing.B) { benchQuery(b, "Recommendations") }
func BenchmarkQueryAnomalies(b *testing.B)       { benchQuery(b, "Anomalies") }

func benchQuery(b *testing.B, name string) {
	q := queryByName(name)
	if q == nil {
		b.Fatalf("no query %s", name)
	}
	e := newTestEnv(b)
	b.Run(nameGateway, func(b *testing.B) {
		e.gateway(b, q) // warm the connection pool and check the answer
		b.ReportAllocs()
		for b.Loop() {
			rec := httptest.NewRecorder()
			e.serve(q, rec)
			if rec.Code != 200 {
				b.Fatalf("status %d", rec.Code)
			}
		}
	})
	b.Run(nameDirect, func(b *testing.B) {
		e.direct(b, q)
		ctx := upstream.WithAPIKey(context.Background(), sim.DemoKey)
		b.ReportAllocs()
		for b.Loop() {
			v, err := q.Direct(ctx, e.client, e.fx)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(map[string]any{"data": v}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
