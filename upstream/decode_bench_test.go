package upstream

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

// The decoding benchmarks measure what the client does with one upstream
// answer once its body has arrived: decode it into the operation's type,
// checks included. The answers are the simulator's, as the gateway's
// benchmark queries ask for them, so the numbers follow real shapes. Beside
// wall time they report the process's CPU time per operation (cpu-ns/op,
// the garbage collector's work included), which a busy machine disturbs
// far less.
//
//	go test -run='^$' -bench=Decode -benchmem ./upstream

// answers holds the simulator's answers, fetched once per test binary.
var answers = sync.OnceValue(fetchAnswers)

// fetchAnswers asks a simulator, as a handler, for one answer of each kind
// the benchmarks decode.
func fetchAnswers() map[string][]byte {
	s := sim.New(sim.Options{})
	asOf := s.AsOf()
	query := `{"dateRange":{"start":"` + asOf.AddDate(0, 0, -29).Format("2006-01-02") + `","end":"` +
		asOf.Format("2006-01-02") + `"},"groupBy":"product_product_name","costType":"line_item_unblended_cost",` +
		`"granularity":"day","filters":[]}`
	budget := s.IDs(sim.DemoKey, sim.CollectionBudgets)[0]
	reqs := map[string]struct{ method, path, body string }{
		"BudgetPage":      {"GET", "/v1/budgets?limit=200", ""},
		"BudgetDetail":    {"GET", "/v1/budgets/" + budget, ""},
		"Actuals":         {"GET", "/v1/budgets/" + budget + "/actuals", ""},
		"Planning":        {"GET", "/v1/budgets/" + budget + "/planning", ""},
		"Lookback":        {"GET", "/v1/budgets/lookback", ""},
		"Recommendations": {"GET", "/v1/recommendations?limit=200", ""},
		"Anomalies":       {"GET", "/v1/anomalies?limit=200", ""},
		"Notifications":   {"GET", "/v1/notifications/scheduled?limit=200", ""},
		"Summary":         {"POST", "/v1/explorer/summary", query},
		"PreviousPeriod":  {"POST", "/v1/explorer/previous-period", query},
		"History":         {"POST", "/v1/explorer/history", query},
		"Heatmap":         {"POST", "/v1/explorer/heatmap", query},
		"DimensionValues": {"GET", "/v1/explorer/dimensions/product_product_name/values", ""},
	}
	out := map[string][]byte{}
	for name, r := range reqs {
		req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
		req.Header.Set("Authorization", "Bearer "+sim.DemoKey)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		out[name] = rec.Body.Bytes()
	}
	return out
}

// benchDecode decodes the named answer b.N times as type T.
func benchDecode[T any](b *testing.B, name string) {
	body := answers()[name]
	if _, err := decodeBody[T](body); err != nil {
		b.Fatalf("%s does not decode: %v\n%.300s", name, err, body)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		if _, err := decodeBody[T](body); err != nil {
			b.Fatal(err)
		}
	}
	if used := processCPU() - cpu; used > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// decodeBody decodes a success answer the way the client does.
func decodeBody[T any](body []byte) (*envelope[T], error) {
	env := new(envelope[T])
	if err := decodeAnswer(bytes.NewReader(body), env); err != nil {
		return nil, err
	}
	return env, nil
}

func BenchmarkDecodeBudgetPage(b *testing.B)   { benchDecode[[]Budget](b, "BudgetPage") }
func BenchmarkDecodeBudgetDetail(b *testing.B) { benchDecode[budgetDetailWire](b, "BudgetDetail") }
func BenchmarkDecodeActuals(b *testing.B)      { benchDecode[BudgetActuals](b, "Actuals") }
func BenchmarkDecodePlanning(b *testing.B)     { benchDecode[BudgetPlanning](b, "Planning") }
func BenchmarkDecodeLookback(b *testing.B)     { benchDecode[Lookback](b, "Lookback") }
func BenchmarkDecodeRecommendations(b *testing.B) {
	benchDecode[[]Recommendation](b, "Recommendations")
}
func BenchmarkDecodeAnomalies(b *testing.B) { benchDecode[[]Anomaly](b, "Anomalies") }
func BenchmarkDecodeNotifications(b *testing.B) {
	benchDecode[[]ScheduledNotification](b, "Notifications")
}
func BenchmarkDecodeExplorerSummary(b *testing.B) { benchDecode[ExplorerSummary](b, "Summary") }
func BenchmarkDecodeExplorerPreviousPeriod(b *testing.B) {
	benchDecode[ExplorerPreviousPeriod](b, "PreviousPeriod")
}
func BenchmarkDecodeExplorerHistory(b *testing.B) { benchDecode[ExplorerHistory](b, "History") }
func BenchmarkDecodeExplorerHeatmap(b *testing.B) { benchDecode[ExplorerHeatmap](b, "Heatmap") }
func BenchmarkDecodeExplorerDimensionValues(b *testing.B) {
	benchDecode[DimensionValues](b, "DimensionValues")
}
