package server

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

// With tracing on, every upstream call carries the W3C traceparent of its
// span, flagged sampled or not as the sampler decided, and the sampled
// traces reach the OTLP endpoint.
func TestTraceparentReachesTheUpstream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sampler, arg, flags string
	}{
		{"traceidratio", "0", "00"},
		{"always_on", "", "01"},
	} {
		t.Run(tc.sampler, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var seen []string
			s := sim.New(sim.Options{})
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Header.Get("Traceparent"))
				mu.Unlock()
				s.ServeHTTP(w, r)
			}))
			t.Cleanup(up.Close)
			var exported int
			sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
					mu.Lock()
					exported++
					mu.Unlock()
				}
				w.WriteHeader(http.StatusOK)
			}))
			t.Cleanup(sink.Close)
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": sink.URL, "OTEL_TRACES_SAMPLER": tc.sampler}
			if tc.arg != "" {
				env["OTEL_TRACES_SAMPLER_ARG"] = tc.arg
			}
			gw := startGateway(t, env, "-upstream", up.URL)
			mu.Lock()
			seen = nil // the readiness check's at start
			mu.Unlock()
			status, ans, err := postGraphQL(t, http.DefaultClient, gw.url, sim.DemoKey,
				`query Two { budgets(first: 2) { nodes { id } } recommendations(first: 1) { nodes { id } } }`)
			if err != nil || status != http.StatusOK || len(ans.Errors) > 0 {
				t.Fatalf("status %d, %v, errors %v", status, err, ans.Errors)
			}
			if err := gw.stop(); err != nil { // sends the spans it holds
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < 2 {
				t.Fatalf("%d upstream calls, want 2", len(seen))
			}
			re := regexp.MustCompile(`^00-([0-9a-f]{32})-[0-9a-f]{16}-` + tc.flags + `$`)
			var trace string
			for i, tp := range seen {
				m := re.FindStringSubmatch(tp)
				if m == nil {
					t.Fatalf("call %d: traceparent %q, want flags %s", i+1, tp, tc.flags)
				}
				if trace != "" && m[1] != trace {
					t.Errorf("call %d is in trace %s, the first in %s: one request, one trace", i+1, m[1], trace)
				}
				trace = m[1]
			}
			if sampled := tc.flags == "01"; sampled != (exported > 0) {
				t.Errorf("%d exports to the OTLP endpoint, sampled %v", exported, sampled)
			}
		})
	}
}
