package graph_test

// Benchmarks of what a hostile request costs the handler, one per shape of
// the hostile-traffic benchmark (bench/hostile_shapes.go) that is refused or
// answered without an upstream call:
//
//	go test -run '^$' -bench BenchmarkHostile -benchmem ./graph
//
// Each sends the request through the real handler (graph.NewHandler: body
// limit, key, limits, parser, validation, executor), with the attackers' key
// and without one, and reports the handler's time and allocations per
// request, and the process's CPU time per request (cpu-ns/op), which a
// loaded machine does not inflate as it does the time. A document that differs each time (the comment-padded one) is
// made different each iteration, so no cache helps it.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/upstream/sim"
)

// hostileBenchBody makes the body of the i-th request of a shape.
type hostileBenchBody func(i int) []byte

func hostileBenchShapes() []struct {
	name string
	body hostileBenchBody
} {
	static := func(b []byte) hostileBenchBody { return func(int) []byte { return b } }
	q := func(query string, vars map[string]any) []byte {
		b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		return b
	}
	padding := strings.Repeat("#", 1_900_000)
	bodyLimit := int(graph.DefaultMaxBodyBytes)
	deep := strings.Repeat("[", 9997) + strings.Repeat("]", 9997)
	return []struct {
		name string
		body hostileBenchBody
	}{
		{"comment-padded", func(i int) []byte {
			return []byte(`{"query":"# ` + strconv.Itoa(i) + " " + padding + `\n{ __typename }"}`)
		}},
		{"comment-padded-at-limit", func(i int) []byte {
			head := `{"query":"# ` + strconv.Itoa(i) + " "
			tail := `\n{ __typename }"}`
			return []byte(head + padding[:bodyLimit-1-len(head)-len(tail)] + tail)
		}},
		{"comment-at-end-at-limit", func(i int) []byte {
			head := `{"query":"{ __typename } # ` + strconv.Itoa(i) + " "
			tail := `"}`
			return []byte(head + padding[:bodyLimit-1-len(head)-len(tail)] + tail)
		}},
		{"string-at-limit", func(i int) []byte {
			head := `{"query":"{ budget(id: \"` + strconv.Itoa(i) + " "
			tail := `\") { id } }"}`
			return []byte(head + strings.Repeat("x", bodyLimit-1-len(head)-len(tail)) + tail)
		}},
		{"malformed-at-limit", static([]byte(`{"query": "{ __typename }", "pad": "` + padding[:bodyLimit-200]))},
		{"tokens-15000", static(q("{"+strings.Repeat(" __typename", 14998)+" }", nil))},
		{"typename-15000", static(q("{"+strings.Repeat(" __typename", 15000)+" }", nil))},
		{"deep-json", static([]byte(`{"query": "mutation Deep($id: ID!, $g: JSON) { updateBudget(input: {id: $id, growthRate: $g}) { budget { id } } }",` +
			`"variables": {"id": "QnVkZ2V0OjE=", "g": ` + deep + `}}`))},
		{"http-1.9MB-body", static([]byte(`{"query": "{ __typename }", "pad": "` + padding))},
		{"fragment-fanout", static(q(fanOut(), nil))},
		{"typename", static(q("{ __typename }", nil))},
	}
}

// processCPU is the CPU time the process has used, in nanoseconds, all
// its threads (the garbage collector's included): on a shared, loaded
// machine it says what a request costs better than the time it took.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func BenchmarkHostile(b *testing.B) {
	e := newEnv(b)
	for _, s := range hostileBenchShapes() {
		for _, key := range []string{sim.DemoKey, ""} {
			name := s.name + "/key"
			if key == "" {
				name = s.name + "/no-key"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				cpu0 := processCPU()
				for b.Loop() {
					body := s.body(i)
					i++
					rec := httptest.NewRecorder()
					e.h.ServeHTTP(rec, postRequest(body, key))
					if rec.Code == http.StatusInternalServerError {
						b.Fatalf("500: %s", rec.Body)
					}
					_, _ = io.Copy(io.Discard, rec.Body)
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
