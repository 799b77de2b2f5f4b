package sim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

// FuzzServeHTTP feeds arbitrary requests to the simulator: it must never
// panic, and must always answer JSON — data on 200, the error envelope
// otherwise. `go test` runs the seed corpus; `go test -fuzz FuzzServeHTTP`
// explores further.
func FuzzServeHTTP(f *testing.F) {
	s := sim.New(sim.Options{})
	id := s.IDs(sim.DemoKey, "budgets")[0]
	q := `{"dateRange":{"start":"2026-10-01","end":"2026-10-31"},"groupBy":"billing_account_name","costType":"line_item_unblended_cost","granularity":"week","filters":[{"dimension":"product_product_name","operator":"not_in","values":["AWS Lambda"]}]}`
	seeds := []struct{ method, target, key, idem, ctype, body string }{
		{"GET", "/v1/budgets?limit=3", sim.DemoKey, "", "", ""},
		{"GET", "/v1/budgets?limit=3&cursor=eyJhZnRlciI6M30", sim.DemoKey, "", "", ""},
		{"GET", "/v1/recommendations?cursor=%00", sim.DemoKey, "", "", ""},
		{"POST", "/v1/explorer/summary", sim.DemoKey, "", "application/json", q},
		{"POST", "/v1/explorer/history", sim.OtherOrgKey, "", "application/json", q},
		{"POST", "/v1/explorer/heatmap", sim.DemoKey, "", "application/json", `{"dateRange":{"start":"0001-01-01","end":"0001-12-31"}}`},
		{"POST", "/v1/explorer/previous-period", sim.DemoKey, "", "application/json", `{"filters":[null,{},[]],"dateRange":[]}`},
		{"POST", "/v1/budgets", sim.DemoKey, "f1", "application/json", `{"name":"x","startDate":"2099-12-01","numberOfPeriods":60,"explorerReportId":"rpt_x","growthRate":1e308}`},
		{"PATCH", "/v1/budgets/" + id, sim.DemoKey, "f2", "application/json", `{"growthRate":-1e308,"lookbackPeriod":1e20,"numberOfPeriods":-0}`},
		{"PATCH", "/v1/budgets/" + id, sim.DemoKey, "f3", "application/json", `{"startDate":"2000-01-01","period":"YEARLY","numberOfPeriods":60}`},
		{"POST", "/v1/budgets/lookback", sim.DemoKey, "", "application/json", `{"explorerReportId":1,"startDate":"0000-01-01","lookbackPeriod":24}`},
		{"DELETE", "/v1/budgets/%2F..%2F", sim.DemoKey, "", "", ""},
		{"GET", "/v1/explorer/dimensions/%E2%82%AC/values", sim.ReadOnlyKey, "", "", ""},
		{"PUT", "/v1//budgets", "nope", "", "", "{"},
		{"GET", "/v1/budgets/lookback", sim.UnentitledKey, "", "", ""},
	}
	for _, sd := range seeds {
		f.Add(sd.method, sd.target, sd.key, sd.idem, sd.ctype, sd.body)
	}
	f.Fuzz(func(t *testing.T, method, target, key, idem, ctype, body string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || method == "" || strings.ContainsAny(method, " \t\r\n") {
			return
		}
		r := &http.Request{
			Method: method, URL: u, RequestURI: target, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Host: "sim.test",
		}
		r.Header.Set("Authorization", "Bearer "+key)
		if idem != "" {
			r.Header.Set("Idempotency-Key", idem)
		}
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, r)
		var v map[string]any
		if rec.Code != http.StatusMethodNotAllowed || method != http.MethodHead {
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
				t.Fatalf("%s %s: %d, body is not JSON: %q", method, target, rec.Code, rec.Body.String())
			}
		}
		if rec.Code == http.StatusOK {
			if _, ok := v["data"]; !ok {
				t.Fatalf("%s %s: 200 without data", method, target)
			}
			return
		}
		e, ok := v["error"].(map[string]any)
		if !ok || e["code"] == "" || e["message"] == "" || e["request_id"] == "" {
			t.Fatalf("%s %s: %d without the error envelope: %s", method, target, rec.Code, rec.Body.String())
		}
	})
}
