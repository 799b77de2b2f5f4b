package graph_test

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/costgw/gateway/upstream/sim"
)

// Under concurrent load from two organizations, no response ever carries a
// record of the other organization: loaders and caches are per request.
func TestIsolationUnderLoad(t *testing.T) {
	t.Parallel()
	// Every worker's request at once, so that shared state would show:
	// admission would let 4 of each key in at a time.
	e := newEnv(t, withAdmission(32, 0))
	keys := []string{sim.DemoKey, sim.OtherOrgKey}
	type org struct {
		orgID   string
		records map[string]bool // every id of the organization's lists
		foreign map[string]bool // every id of the other organization's lists
	}
	orgs := map[string]*org{}
	for _, k := range keys {
		o := &org{records: map[string]bool{}}
		for _, c := range []string{"budgets", "recommendations", "anomalies", "notifications"} {
			for _, id := range e.sim.IDs(k, c) {
				o.records[id] = true
			}
		}
		var got struct {
			Budgets struct {
				Nodes []struct{ OrganizationID string }
			}
		}
		e.mustQuery(t, k, `{ budgets(first: 1) { nodes { organizationId } } }`, nil, &got)
		o.orgID = got.Budgets.Nodes[0].OrganizationID
		orgs[k] = o
	}
	orgs[keys[0]].foreign, orgs[keys[1]].foreign = orgs[keys[1]].records, orgs[keys[0]].records

	// The same query text for both keys, so any shared cache would show.
	const q = `query($first: Int) {
	  budgets(first: $first) { nodes { id upstreamId organizationId metrics { totalActual } actuals { total }
	    plannings { upstreamId budgetId actuals { amount } } } }
	  recommendations(first: 20) { nodes { recommendationId } }
	  anomalies(first: 20) { nodes { anomalyId } }
	  scheduledNotifications(first: 20) { totalCount nodes { id upstreamId } }
	}`
	// 500 requests: each key asks each of the 20 page sizes a dozen times,
	// 32 at a time. (2000 took 200 s of a busy 2-core machine under -race.)
	const requests, workers = 500, 32
	var next, crossHits, failures atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > requests {
					return
				}
				// Both keys ask every page size, so that a cache of answers
				// keyed on the query and its variables alone would show.
				key := keys[i%2]
				r := e.query(t, key, q, map[string]any{"first": 5 + int(i/2%20)})
				if len(r.Errors) > 0 {
					failures.Add(1)
					continue
				}
				hits := foreignIDs(r.Data, orgs[key].orgID, orgs[key].foreign)
				if hits > 0 {
					crossHits.Add(int64(hits))
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d requests from 2 organizations: %d cross-tenant records, %d failed requests", requests, crossHits.Load(), failures.Load())
	if crossHits.Load() != 0 || failures.Load() != 0 {
		t.Fatalf("cross-tenant records: %d, failed requests: %d", crossHits.Load(), failures.Load())
	}
}

// foreignIDs counts the string values in data that are ids of the other
// organization, or organization ids other than own.
func foreignIDs(data json.RawMessage, own string, foreign map[string]bool) int {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return 1
	}
	n := 0
	var walk func(k string, v any)
	walk = func(k string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k2, v2 := range v {
				walk(k2, v2)
			}
		case []any:
			for _, x := range v {
				walk(k, x)
			}
		case string:
			if foreign[v] || (k == "organizationId" && v != own) {
				n++
			}
		}
	}
	walk("", v)
	return n
}
