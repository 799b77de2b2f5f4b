//go:build unix

package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/internal/testredis"
	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
)

// replicas are two gateways sharing one simulator and one real Redis, as a
// deployment runs them.
type replicas struct {
	sim  *sim.Server
	up   *httptest.Server
	rds  *testredis.Server
	a, b *gateway
}

// startReplicas starts Redis, the simulator and two replicas with the
// cache on and args, until the test ends.
func startReplicas(t *testing.T, args ...string) *replicas {
	t.Helper()
	r := &replicas{rds: testredis.Start(t)}
	r.sim, r.up = simUpstream(t, sim.Options{})
	args = append([]string{"-upstream", r.up.URL, "-redis-url", r.rds.URL(), "-cache", "on",
		"-request-timeout", cacheRequestTimeout.String()}, args...)
	r.a, r.b = startGateway(t, nil, args...), startGateway(t, nil, args...)
	return r
}

// explorerReport returns the upstream id of an Explorer report of key's
// organization, for a budget to be created on.
func explorerReport(t *testing.T, g *gateway, key string) string {
	t.Helper()
	a := ask(t, g, key, `{ budgets(first: 1) { nodes { explorerReportId } } }`, nil)
	var d struct {
		Budgets struct {
			Nodes []struct{ ExplorerReportID string }
		}
	}
	if err := json.Unmarshal(a.Data, &d); err != nil || len(d.Budgets.Nodes) == 0 {
		t.Fatalf("an Explorer report: %s", a)
	}
	return d.Budgets.Nodes[0].ExplorerReportID
}

// TestCacheWriteSeenAtOnce writes through replica A with one key and reads
// through replica B, and A, with another key of the same organization, at
// once: the write evicted, for every key and on every replica, the entries
// holding what it changed. Both replicas' caches hold the reader's entries
// before the write, so a write that evicts only its own key's entries, or
// only on its own replica, fails.
func TestCacheWriteSeenAtOnce(t *testing.T) {
	t.Parallel()
	r := startReplicas(t)
	ids := r.sim.IDs(writerKey, sim.CollectionBudgets)
	updated, deleted := ids[0], ids[1]
	report := explorerReport(t, r.a, writerKey)

	for _, c := range []struct {
		name     string
		budget   string // the budget whose read is warmed, "" for none
		mutation string
		vars     map[string]any
		// check judges what the reader sees after the write.
		check func(t *testing.T, list []budgetRow, one *budgetRow, a cacheAnswer)
	}{
		{
			name:     "update",
			budget:   updated,
			mutation: `mutation($in: UpdateBudgetInput!) { updateBudget(input: $in) { userErrors { message } } }`,
			vars:     map[string]any{"in": map[string]any{"id": relay.BudgetID(updated), "name": "Renamed on A"}},
			check: func(t *testing.T, list []budgetRow, one *budgetRow, a cacheAnswer) {
				if one == nil || one.Name != "Renamed on A" {
					t.Errorf("the budget: %s, want the new name", a)
				}
				if !slices.ContainsFunc(list, func(b budgetRow) bool { return b.Name == "Renamed on A" }) {
					t.Errorf("the list has not the new name: %q", names(list))
				}
			},
		},
		{
			name:     "create",
			mutation: `mutation($in: CreateBudgetInput!) { createBudget(input: $in) { userErrors { message } } }`,
			vars: map[string]any{"in": map[string]any{"name": "Created on A", "startDate": "2026-01-01",
				"numberOfPeriods": 3, "explorerReportId": report}},
			check: func(t *testing.T, list []budgetRow, _ *budgetRow, _ cacheAnswer) {
				if !slices.ContainsFunc(list, func(b budgetRow) bool { return b.Name == "Created on A" }) {
					t.Errorf("the list has not the created budget: %q", names(list))
				}
			},
		},
		{
			name:     "delete",
			budget:   deleted,
			mutation: `mutation($in: DeleteBudgetInput!) { deleteBudget(input: $in) { success userErrors { message } } }`,
			vars:     map[string]any{"in": map[string]any{"id": relay.BudgetID(deleted)}},
			check: func(t *testing.T, list []budgetRow, one *budgetRow, a cacheAnswer) {
				if one != nil || a.code() != "NOT_FOUND" {
					t.Errorf("the deleted budget: %s, want null and NOT_FOUND", a)
				}
				if slices.ContainsFunc(list, func(b budgetRow) bool { return b.ID == relay.BudgetID(deleted) }) {
					t.Errorf("the list still has the deleted budget: %q", names(list))
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, g := range []*gateway{r.a, r.b} {
				warm(t, g, sameOrgKey, listQuery, nil)
				if c.budget != "" {
					warm(t, g, sameOrgKey, budgetQuery, budgetVars(c.budget))
				}
			}
			if a := ask(t, r.a, writerKey, c.mutation, c.vars); len(a.Errors) > 0 || strings.Contains(string(a.Data), `"message"`) {
				t.Fatalf("the write on A: %s", a)
			}
			for _, g := range []*gateway{r.b, r.a} {
				list := listed(t, ask(t, g, sameOrgKey, listQuery, nil))
				var one *budgetRow
				var a cacheAnswer
				if c.budget != "" {
					a = ask(t, g, sameOrgKey, budgetQuery, budgetVars(c.budget))
					one = single(t, a)
				}
				c.check(t, list, one, a)
			}
		})
	}
}

// TestCacheRevokedKey revokes a key whose reads both replicas serve from the
// cache: past -key-recheck neither serves it anything cached, and both
// answer it UNAUTHENTICATED, as the upstream refuses it.
func TestCacheRevokedKey(t *testing.T) {
	t.Parallel()
	const recheck = 300 * time.Millisecond
	r := startReplicas(t, "-key-recheck", recheck.String())
	for _, g := range []*gateway{r.a, r.b} {
		warm(t, g, writerKey, listQuery, nil)
	}
	revoked := time.Now()
	r.sim.RevokeKey(writerKey)
	for _, g := range []*gateway{r.a, r.b} {
		for refused := 0; refused < 3; {
			sent := time.Now()
			a := ask(t, g, writerKey, listQuery, nil)
			switch {
			case a.code() == "UNAUTHENTICATED" && !strings.Contains(string(a.Data), "org-1001"):
				refused++
			case refused > 0 || !a.fromCache():
				t.Fatalf("%v after the revocation: %s, want UNAUTHENTICATED or, before -key-recheck, the cache's answer",
					sent.Sub(revoked).Round(time.Millisecond), a)
			case sent.Sub(revoked) > recheck:
				t.Fatalf("%v after the revocation, past -key-recheck %v: served from the cache: %s",
					sent.Sub(revoked).Round(time.Millisecond), recheck, a)
			default:
				time.Sleep(recheck / 10)
			}
		}
	}
	r.sim.RestoreKey(writerKey)
	for _, g := range []*gateway{r.a, r.b} {
		if got := listed(t, ask(t, g, writerKey, listQuery, nil)); len(got) == 0 {
			t.Errorf("the key restored: no budgets")
		}
	}
}

// TestCacheStaleIfError fails the upstream once both replicas cached a list
// and a budget: past their TTL those reads answer from the expired entries,
// with extensions.cache.stale and the data they had, while a read nothing
// cached fails as it would without a cache.
func TestCacheStaleIfError(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		fail func(r *replicas)
	}{
		{"the upstream answers 500", func(r *replicas) { r.sim.SetFaults(sim.Faults{Error500: 1}) }},
		{"the upstream is gone", func(r *replicas) { r.up.Close() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			const ttl = 300 * time.Millisecond
			r := startReplicas(t, "-cache-ttl", ttl.String(), "-cache-stale-if-error", "1m")
			reads := []read{listRead, budgetRead(r.sim.IDs(writerKey, sim.CollectionBudgets)[0])}
			want := map[*gateway][]string{}
			for _, g := range []*gateway{r.a, r.b} {
				for _, q := range reads {
					want[g] = append(want[g], string(warm(t, g, writerKey, q.query, q.vars).Data))
				}
			}
			c.fail(r)
			for _, g := range []*gateway{r.a, r.b} {
				for i, q := range reads {
					a := ask(t, g, writerKey, q.query, q.vars)
					for deadline := time.Now().Add(ttl + 5*time.Second); !a.stale() && time.Now().Before(deadline); {
						if !a.fromCache() {
							t.Fatalf("%s before its TTL: %s, want the cache's answer", q.op, a)
						}
						time.Sleep(ttl / 10)
						a = ask(t, g, writerKey, q.query, q.vars)
					}
					if !a.stale() || len(a.Errors) > 0 || a.Extensions.Cache.Misses == 0 || string(a.Data) != want[g][i] { // a stale answer counts its refresh as a miss
						t.Errorf("%s past its TTL: %s, want stale data %s", q.op, a, want[g][i])
					}
				}
				uncached := `query CacheUncached { budgets(first: 3) { nodes { id } } }`
				if a := ask(t, g, writerKey, uncached, nil); a.code() != "UPSTREAM_UNAVAILABLE" || a.stale() {
					t.Errorf("a read nothing cached: %s, want UPSTREAM_UNAVAILABLE", a)
				}
			}
		})
	}
}

// renameUpstream renames the budget of upstream id on the simulator at
// baseURL, with key, around the gateway: no eviction.
func renameUpstream(t *testing.T, baseURL, key, id, name string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"name": name})
	req, _ := http.NewRequest(http.MethodPatch, baseURL+"/v1/budgets/"+id, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", fmt.Sprintf("rename-%x", sha256.Sum256([]byte(id+name)))[:32])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PATCH /v1/budgets/%s: %d", id, resp.StatusCode)
	}
}

// TestCacheNoCache reads a budget renamed around the gateway with the
// request header that asks for fresh data: that read is a real call, and
// the entry it refreshes answers the later reads, on its replica and, from
// Redis, on the other.
func TestCacheNoCache(t *testing.T) {
	t.Parallel()
	r := startReplicas(t)
	ids := r.sim.IDs(writerKey, sim.CollectionBudgets)
	if a := ask(t, r.b, writerKey, listQuery, nil); len(a.Errors) > 0 {
		t.Fatalf("B's first read (the key's admission): %s", a)
	}
	for i, header := range []string{"no-cache", "max-age=0, must-revalidate"} {
		t.Run(header, func(t *testing.T) {
			vars := budgetVars(ids[i]) // a budget of its own, which B never read
			warm(t, r.a, writerKey, budgetQuery, vars)
			name := "Renamed around the gateway " + header
			renameUpstream(t, r.up.URL, writerKey, ids[i], name)
			if a := ask(t, r.a, writerKey, budgetQuery, vars); !a.fromCache() || single(t, a).Name == name {
				t.Fatalf("without the header: %s, want the cached entry, of the old name", a)
			}
			calls := r.sim.Calls(ops.GetBudget)
			a := ask(t, r.a, writerKey, budgetQuery, vars, "Cache-Control", header)
			if !a.fromUpstream() || single(t, a).Name != name || r.sim.Calls(ops.GetBudget) != calls+1 {
				t.Errorf("Cache-Control: %s: %s, %d calls of getBudget; want one, and the new name", header, a, r.sim.Calls(ops.GetBudget)-calls)
			}
			for _, g := range []*gateway{r.a, r.b} {
				if a := ask(t, g, writerKey, budgetQuery, vars); !a.fromCache() || single(t, a).Name != name {
					t.Errorf("then without it: %s, want the refreshed entry", a)
				}
			}
		})
	}
}

// TestCacheEntriesStayWithTheirKey reads, with another key, what both
// replicas hold in their caches for the writer's key: its first read of
// each is a real call, and gets what the upstream gives that key. Each key
// is admitted first (a key's first read on a replica is always sent), so a
// cache that served the writer's entries to it would answer from them.
func TestCacheEntriesStayWithTheirKey(t *testing.T) {
	t.Parallel()
	r := startReplicas(t)
	id := r.sim.IDs(writerKey, sim.CollectionBudgets)[0]
	var wantOne string
	for _, g := range []*gateway{r.a, r.b} {
		warm(t, g, writerKey, listQuery, nil)
		wantOne = string(warm(t, g, writerKey, budgetQuery, budgetVars(id)).Data)
	}
	for _, c := range []struct {
		name string
		g    *gateway
		key  string
		org  string
	}{
		{"another key of the organization, on the writer's replica", r.a, sameOrgKey, "org-1001"},
		{"a key of another organization, on the other replica", r.b, otherOrgKey, "org-2002"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if a := ask(t, c.g, c.key, `query CacheAdmit { budgets(first: 1) { nodes { id } } }`, nil); len(a.Errors) > 0 {
				t.Fatalf("the key's admission: %s", a)
			}
			lists, gets := r.sim.Calls(ops.ListBudgets), r.sim.Calls(ops.GetBudget)
			list := ask(t, c.g, c.key, listQuery, nil)
			one := ask(t, c.g, c.key, budgetQuery, budgetVars(id))
			if l, g := r.sim.Calls(ops.ListBudgets)-lists, r.sim.Calls(ops.GetBudget)-gets; l != 1 || g != 1 {
				t.Errorf("the upstream got %d listBudgets and %d getBudget calls, want one of each", l, g)
			}
			if !list.fromUpstream() || !one.fromUpstream() {
				t.Errorf("the first reads: %s and %s, want both from the upstream", list, one)
			}
			for _, b := range listed(t, list) {
				if b.OrganizationID != c.org {
					t.Fatalf("the list holds a budget of %s, want only %s's: %s", b.OrganizationID, c.org, list)
				}
			}
			switch {
			case c.org == "org-1001" && string(one.Data) != wantOne:
				t.Errorf("the budget: %s, want %s", one, wantOne)
			case c.org != "org-1001" && (one.code() != "NOT_FOUND" || single(t, one) != nil):
				t.Errorf("another organization's budget: %s, want null and NOT_FOUND", one)
			}
		})
	}
}

// TestCacheRedisDown stops Redis once replica A cached a list and a budget:
// every read still answers, within the request's deadline, from the
// upstream, as the versions of what those entries depend on cannot be
// checked.
func TestCacheRedisDown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		stop func(*testredis.Server, testing.TB)
	}{
		{"hung (SIGSTOP)", (*testredis.Server).Pause},
		{"gone (SIGKILL)", (*testredis.Server).Kill},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := startReplicas(t)
			reads := []read{listRead, budgetRead(r.sim.IDs(writerKey, sim.CollectionBudgets)[0])}
			var want []string
			for _, q := range reads {
				want = append(want, string(warm(t, r.a, writerKey, q.query, q.vars).Data))
			}
			warm(t, r.b, writerKey, reads[1].query, reads[1].vars)
			c.stop(r.rds, t)
			for _, g := range []*gateway{r.a, r.b} {
				for i, q := range reads {
					calls := r.sim.Calls(q.op)
					a := ask(t, g, writerKey, q.query, q.vars)
					if !a.fromUpstream() || len(a.Errors) > 0 || string(a.Data) != want[i] || r.sim.Calls(q.op) != calls+1 {
						t.Errorf("%s with Redis %s: %s, %d calls; want one call and the data %s", q.op, c.name, a, r.sim.Calls(q.op)-calls, want[i])
					}
				}
			}
			// A list and each budget's detail and actuals: 49 reads.
			fanout := `query CacheFanout { budgets(first: 100) { nodes { name metrics { variance } actuals { total } } } }`
			if a := ask(t, r.a, writerKey, fanout, nil); len(a.Errors) > 0 || a.elapsed > cacheRequestTimeout {
				t.Errorf("many reads with Redis %s: %s, want them all within %v", c.name, a, cacheRequestTimeout)
			}
		})
	}
}

// TestCacheWriteRedisRefuses writes through replica A while Redis refuses
// writes (out of memory, as maxmemory with noeviction answers) but still
// answers reads: the write's eviction does not reach Redis, which A logs,
// and A serves no entry recorded before it, of any key: its own reads show
// the write at once. Once Redis takes writes again, A's retry of the
// eviction reaches it, and B shows the write too.
func TestCacheWriteRedisRefuses(t *testing.T) {
	t.Parallel()
	r := startReplicas(t)
	id := r.sim.IDs(writerKey, sim.CollectionBudgets)[0]
	warm(t, r.a, sameOrgKey, listQuery, nil)
	warm(t, r.a, sameOrgKey, budgetQuery, budgetVars(id))
	warm(t, r.b, sameOrgKey, budgetQuery, budgetVars(id))
	rdb := r.rds.Client(t)
	if err := rdb.ConfigSet(t.Context(), "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	update := `mutation($in: UpdateBudgetInput!) { updateBudget(input: $in) { userErrors { message } } }`
	in := map[string]any{"in": map[string]any{"id": relay.BudgetID(id), "name": "Renamed, Redis full"}}
	if a := ask(t, r.a, writerKey, update, in); len(a.Errors) > 0 || strings.Contains(string(a.Data), `"message"`) {
		t.Fatalf("the write on A: %s", a)
	}
	if one := single(t, ask(t, r.a, sameOrgKey, budgetQuery, budgetVars(id))); one == nil || one.Name != "Renamed, Redis full" {
		t.Errorf("the budget on A: %+v, want the new name", one)
	}
	if list := listed(t, ask(t, r.a, sameOrgKey, listQuery, nil)); !slices.ContainsFunc(list, func(b budgetRow) bool { return b.Name == "Renamed, Redis full" }) {
		t.Errorf("the list on A has not the new name: %q", names(list))
	}
	if !strings.Contains(r.a.logs.String(), "a write's eviction did not reach the shared cache") {
		t.Errorf("A did not log that the eviction failed:\n%s", r.a.logs)
	}
	// Once Redis takes writes again, A's eviction is sent again, and B
	// shows the write too.
	if err := rdb.ConfigSet(t.Context(), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	var one *budgetRow
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if one = single(t, ask(t, r.b, sameOrgKey, budgetQuery, budgetVars(id))); one != nil && one.Name == "Renamed, Redis full" {
			return
		}
	}
	t.Errorf("the budget on B 5 s after Redis took writes again: %+v, want the new name", one)
}
