package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream/sim"
)

// Each flood is divided by the quiet runs beside it, and a run whose
// processes were not pinned has no verdict.
func TestFairGoals(t *testing.T) {
	phase := func(kind string, ok int) fairPhase {
		return fairPhase{Kind: kind, Window: time.Second, A: tenantCount{OK: ok}, GatewayCPU: time.Second}
	}
	r := &fairReport{Pinned: true, Phases: []fairPhase{
		phase(phaseQuiet, 100), phase(fairValid, 50), phase(phaseQuiet, 120), phase(fairRefused, 95), phase(phaseQuiet, 80),
	}}
	goals := fairGoals(r)
	if len(goals) != 2 || !goals[0].Met || goals[0].Measured != "0.45 (50 ÷ 110 req/s)" || !goals[1].Met || goals[1].Measured != "0.95 (95 ÷ 100 req/s)" {
		t.Errorf("goals %+v", goals)
	}
	if got := r.aShare(&r.Phases[1]); got != 0.5 {
		t.Errorf("A's share of the valid flood's CPU = %v, want 0.5 (50 requests at a quiet cost of 10 ms)", got)
	}
	r.Pinned = false
	for _, g := range fairGoals(r) {
		if !g.NotMeasured {
			t.Errorf("unpinned, yet %+v", g)
		}
	}
}

// A tenant's load process counts the answers that end in its window, good
// ones and the rest.
func TestTenantWorker(t *testing.T) {
	srv := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(srv.Close)
	from := time.Now()
	spec := tenantSpec{URL: srv.URL + "/v1/budgets", Key: sim.DemoKey, Bodies: []string{"{}"}, Clients: 2, From: from, To: from.Add(300 * time.Millisecond)}
	b, _ := json.Marshal(spec)
	file := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runTenantWorker(context.Background(), file, &out); err != nil {
		t.Fatal(err)
	}
	var c tenantCount
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	// A POST of budgets is a create the simulator refuses for its body:
	// every answer is counted, none as good.
	if c.OK != 0 || c.Errors == 0 || c.FirstError == "" {
		t.Errorf("count %+v, want only errors", c)
	}
}
