package sim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

// Serve the simulator over HTTP and count what a client asked of it.
func Example() {
	s := sim.New(sim.Options{})
	srv := httptest.NewServer(s)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/budgets?limit=2", nil)
	req.Header.Set("Authorization", "Bearer "+sim.DemoKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var body struct {
		Data       []json.RawMessage `json:"data"`
		Pagination struct {
			HasMore bool `json:"has_more"`
		} `json:"pagination"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.StatusCode, len(body.Data), body.Pagination.HasMore)
	fmt.Println(s.Calls(ops.ListBudgets), len(s.IDs(sim.DemoKey, sim.CollectionBudgets)))
	// Output:
	// 200 2 true
	// 1 24
}

// Inject a fault into one operation only.
func ExampleServer_SetFaults() {
	s := sim.New(sim.Options{})
	s.SetFaults(sim.Faults{Error503: 1, Ops: []string{ops.ListAnomalies}})
	srv := httptest.NewServer(s)
	defer srv.Close()

	for _, path := range []string{"/v1/anomalies", "/v1/recommendations"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+sim.DemoKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(path, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Output:
	// /v1/anomalies 503 1
	// /v1/recommendations 200
}
