package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
	"github.com/google/go-cmp/cmp"
)

// newSim serves a fresh simulator below basePath and returns it with a
// client of it. Each test gets its own, so tests that write run in parallel.
func newSim(t *testing.T, opts ...upstream.Option) (*sim.Server, *upstream.Client) {
	t.Helper()
	s := sim.New(sim.Options{})
	return s, simClient(t, s, s, opts...)
}

// newSimDroppingFirstAnswer returns a simulator that commits the first call
// of op and drops its answer, then answers every later call, and a client of
// it: the case of a write whose answer was lost after it happened.
func newSimDroppingFirstAnswer(t *testing.T, op string) (*sim.Server, *upstream.Client) {
	t.Helper()
	s := sim.New(sim.Options{})
	s.SetFaults(sim.Faults{DropAfter: 1, Ops: []string{op}})
	// Clear the fault before any call after the first (which is dropped).
	clearAfterFirst := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Calls(op) >= 1 {
			s.SetFaults(sim.Faults{})
		}
		s.ServeHTTP(w, r)
	})
	return s, simClient(t, s, clearAfterFirst)
}

// simClient serves h below basePath and returns a client of it.
func simClient(t *testing.T, s *sim.Server, h http.Handler, opts ...upstream.Option) *upstream.Client {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(basePath+"/", http.StripPrefix(basePath, h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return newTestClient(t, srv.URL+basePath, opts...)
}

func as(t *testing.T, key string) context.Context { return upstream.WithAPIKey(t.Context(), key) }

func cents(x float64) int64 { return int64(math.Round(x * 100)) }

// last30Days is the query the simulator's dimension values are computed over.
func last30Days(s *sim.Server, groupBy string) *upstream.ExplorerQuery {
	end := upstream.DateOf(s.AsOf())
	return &upstream.ExplorerQuery{
		DateRange:   upstream.DateRange{Start: upstream.DateOf(s.AsOf().AddDate(0, 0, -29)), End: end},
		GroupBy:     groupBy,
		CostType:    "line_item_unblended_cost",
		Granularity: "day",
	}
}

// simReads is what each case of TestSimReads reads from: one simulator,
// shared, since none of them writes.
type simReads struct {
	s   *sim.Server
	c   *upstream.Client
	ctx context.Context
}

// Every read of the client against the simulator returns plausible records
// that agree with each other.
func TestSimReads(t *testing.T) {
	t.Parallel()
	s, c := newSim(t)
	r := simReads{s, c, as(t, sim.DemoKey)}
	for _, tc := range []struct {
		name  string
		check func(*testing.T, simReads)
	}{
		{"Recommendations.List", simRecommendationsList},
		{"Anomalies.List", simAnomaliesList},
		{"Notifications.ListScheduled", simNotificationsList},
		{"Budgets.List", simBudgetsList},
		{"Budgets.Get, Actuals, Planning", simBudgetDetails},
		{"Budgets.LookbackPreview", simLookbackPreview},
		{"Budgets.Lookback", simLookback},
		{"Explorer", simExplorer},
		{"open objects keep the simulator's extra members", simExtraMembers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.check(t, r)
		})
	}
}

func simRecommendationsList(t *testing.T, r simReads) {
	p, err := r.c.Recommendations.List(r.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Data) != 50 || p.Pagination.Limit != 50 || !p.Pagination.HasMore || p.Pagination.NextCursor == nil {
		t.Fatalf("first page: %d records, pagination %+v; want 50 and more", len(p.Data), p.Pagination)
	}
	for _, rec := range p.Data {
		if rec.RecommendationID == "" || rec.RecommendationName == "" || rec.EstimatedMonthlySavings <= 0 || rec.Category == "" {
			t.Errorf("implausible recommendation %+v", rec)
		}
	}
}

func simAnomaliesList(t *testing.T, r simReads) {
	p, err := r.c.Anomalies.List(r.ctx, &upstream.ListOptions{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Data) != 200 {
		t.Fatalf("%d anomalies, want 200", len(p.Data))
	}
	for _, a := range p.Data {
		if a.AnomalyID == "" || a.Service == "" || a.StartDate.IsZero() || a.EndDate.Time().Before(a.StartDate.Time()) {
			t.Errorf("implausible anomaly %+v", a)
		}
	}
}

func simNotificationsList(t *testing.T, r simReads) {
	p, err := r.c.Notifications.ListScheduled(r.ctx, &upstream.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(r.s.IDs(sim.DemoKey, sim.CollectionNotifications)); p.Pagination.Total == nil || *p.Pagination.Total != want {
		t.Errorf("pagination %+v, want total %d", p.Pagination, want)
	}
	for _, n := range p.Data {
		if n.ID == "" || n.ScheduledAt.IsZero() || n.CreatedAt.IsZero() || n.UpdatedAt.Before(n.CreatedAt.Time) || !strings.Contains(n.RecipientEmail, "@") {
			t.Errorf("implausible notification %+v", n)
		}
	}
}

func simBudgetsList(t *testing.T, r simReads) {
	p, err := r.c.Budgets.List(r.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(r.s.IDs(sim.DemoKey, sim.CollectionBudgets)); len(p.Data) != want || p.Pagination.HasMore || p.Pagination.NextCursor != nil {
		t.Fatalf("%d budgets, pagination %+v; want all %d on one page", len(p.Data), p.Pagination, want)
	}
	for _, b := range p.Data {
		checkBudget(t, b, "org-1001", 1001)
	}
}

// simBudgetDetails checks five budgets' details, planning grids and
// actuals against each other.
func simBudgetDetails(t *testing.T, r simReads) {
	for _, id := range r.s.IDs(sim.DemoKey, sim.CollectionBudgets)[:5] {
		d, err := r.c.Budgets.Get(r.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Budget.ID != id {
			t.Errorf("Get(%s) returned budget %s", id, d.Budget.ID)
		}
		checkBudget(t, d.Budget, "org-1001", 1001)
		if d.Metrics.TotalTarget <= 0 || cents(d.Metrics.Variance) != cents(d.Metrics.TotalTarget)-cents(d.Metrics.TotalActual) {
			t.Errorf("budget %s metrics %+v: want a positive target and variance = target - actual", id, d.Metrics)
		}
		if len(d.Dimensions) == 0 {
			t.Errorf("budget %s has no dimensions", id)
		}
		planIDs := simPlanning(t, r, d)
		simActuals(t, r, d, planIDs)
	}
}

// simPlanning checks the planning grid of budget d, and returns its rows' ids.
func simPlanning(t *testing.T, r simReads, d *upstream.BudgetDetail) []string {
	t.Helper()
	id := d.Budget.ID
	pl, err := r.c.Budgets.Planning(r.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var planIDs []string
	for _, row := range pl.Plannings {
		planIDs = append(planIDs, row.ID)
		if row.BudgetID != id || row.Dimension1 == "" || len(row.TargetItems) == 0 || row.CreatedAt.IsZero() {
			t.Errorf("implausible planning row %+v of budget %s", row, id)
		}
	}
	var embedded []string
	for _, row := range d.Budget.Plannings {
		embedded = append(embedded, row.ID)
	}
	if diff := cmp.Diff(embedded, planIDs); diff != "" {
		t.Errorf("planning grid and the budget's plannings differ (-budget +grid):\n%s", diff)
	}
	return planIDs
}

// simActuals checks the actuals of budget d: each period's rows sum to the
// account's actual, the rows are of its planning rows, and the periods sum
// to its metrics' total.
func simActuals(t *testing.T, r simReads, d *upstream.BudgetDetail, planIDs []string) {
	t.Helper()
	id := d.Budget.ID
	act, err := r.c.Budgets.Actuals(r.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for period, v := range act.AccountActualsByPeriod {
		var sum int64
		for _, row := range act.ActualsByPlanning {
			sum += cents(row[period])
		}
		if sum != cents(v) {
			t.Errorf("budget %s period %s: rows sum to %d cents, account actual %d", id, period, sum, cents(v))
		}
		total += cents(v)
	}
	for pid := range act.ActualsByPlanning {
		if !slices.Contains(planIDs, pid) {
			t.Errorf("actuals of unknown planning row %s", pid)
		}
	}
	if total != cents(d.Metrics.TotalActual) {
		t.Errorf("budget %s: actuals total %d cents, metrics.totalActual %d", id, total, cents(d.Metrics.TotalActual))
	}
}

func simLookbackPreview(t *testing.T, r simReads) {
	lb, err := r.c.Budgets.LookbackPreview(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(lb.Periods) != 6 {
		t.Fatalf("%d periods, want 6", len(lb.Periods))
	}
	for _, p := range lb.Periods {
		if p.Projected == nil || p.Actual <= 0 || len(p.PeriodKey) != len("2026-01") {
			t.Errorf("implausible preview period %+v", p)
		}
	}
}

func simLookback(t *testing.T, r simReads) {
	d, err := r.c.Budgets.Get(r.ctx, r.s.IDs(sim.DemoKey, sim.CollectionBudgets)[0])
	if err != nil {
		t.Fatal(err)
	}
	lb, err := r.c.Budgets.Lookback(r.ctx, &upstream.LookbackRequest{
		ExplorerReportID: d.Budget.ExplorerReportID, StartDate: ymd(2026, 6, 1), LookbackPeriod: pointerTo(4),
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range lb.Periods {
		keys = append(keys, p.PeriodKey)
		if p.Projected != nil {
			t.Errorf("POST lookback period %+v carries projected", p)
		}
	}
	if diff := cmp.Diff([]string{"2026-02", "2026-03", "2026-04", "2026-05"}, keys); diff != "" {
		t.Errorf("periods (-want +got):\n%s", diff)
	}
}

// simExplorer checks that the Explorer's summary, previous period, history,
// heatmap and dimension values of the last 30 days agree on the total, and
// that the summary is served from the cache the second time.
func simExplorer(t *testing.T, r simReads) {
	const groupBy = "product_product_name"
	q := last30Days(r.s, groupBy)
	sum, err := r.c.Explorer.Summary(r.ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Cards) != 3 || sum.Cards[0].Title != "Total cost" || sum.Cards[0].Value <= 0 {
		t.Fatalf("summary cards %+v", sum.Cards)
	}
	total := cents(sum.Cards[0].Value)
	for _, part := range []struct {
		name  string
		total func(*testing.T, simReads, *upstream.ExplorerQuery) int64
	}{
		{"history rows", explorerHistoryTotal},
		{"heatmap rows", explorerHeatmapTotal},
		{"dimension values", explorerDimensionValuesTotal},
	} {
		if got := part.total(t, r, q); got != total {
			t.Errorf("%s sum to %d cents, 30-day summary total %d", part.name, got, total)
		}
	}

	pp, err := r.c.Explorer.PreviousPeriod(r.ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if cents(pp.CurrentTotal) != total || cents(pp.PreviousTotal) != cents(sum.Cards[0].PreviousValue) {
		t.Errorf("previous period %+v disagrees with the summary's first card %+v", pp, sum.Cards[0])
	}

	again, err := r.c.Explorer.Summary(r.ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if sum.ServedFromCache || !again.ServedFromCache {
		t.Errorf("servedFromCache first %t then %t, want false then true", sum.ServedFromCache, again.ServedFromCache)
	}
}

// explorerHistoryTotal checks the history rows of q, each a day of q's
// range with a value of its group, and returns their cost in cents.
func explorerHistoryTotal(t *testing.T, r simReads, q *upstream.ExplorerQuery) int64 {
	t.Helper()
	h, err := r.c.Explorer.History(r.ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if h.TimeColumn == "" || h.GroupBy != q.GroupBy || len(h.CostRows) == 0 {
		t.Fatalf("history timeColumn %q groupBy %q with %d rows", h.TimeColumn, h.GroupBy, len(h.CostRows))
	}
	var total int64
	for _, row := range h.CostRows {
		day, err := row.Date(h.TimeColumn)
		if err != nil {
			t.Fatalf("row %v: %v", row, err)
		}
		if day.Time().Before(q.DateRange.Start.Time()) || day.Time().After(q.DateRange.End.Time()) {
			t.Errorf("row day %v outside %v..%v", day, q.DateRange.Start, q.DateRange.End)
		}
		if g, ok := row.String(q.GroupBy); !ok || g == "" {
			t.Errorf("row %v has no %s", row, q.GroupBy)
		}
		cost, ok := row.Number("cost")
		if !ok {
			t.Errorf("row %v has no numeric cost", row)
		}
		total += cents(cost)
	}
	return total
}

// explorerHeatmapTotal checks the heatmap rows of q and returns their cost
// in cents.
func explorerHeatmapTotal(t *testing.T, r simReads, q *upstream.ExplorerQuery) int64 {
	t.Helper()
	hm, err := r.c.Explorer.Heatmap(r.ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, row := range hm.Rows {
		total += cents(row.Cost)
		if row.Dimension == "" || row.Day.IsZero() {
			t.Errorf("implausible heatmap row %+v", row)
		}
	}
	return total
}

// explorerDimensionValuesTotal checks that the values of q's group-by
// dimension and its items agree, and returns the items' cost in cents.
func explorerDimensionValuesTotal(t *testing.T, r simReads, q *upstream.ExplorerQuery) int64 {
	t.Helper()
	dv, err := r.c.Explorer.DimensionValues(r.ctx, q.GroupBy)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	var names []string
	for _, it := range dv.Items {
		total += cents(it.Cost)
		names = append(names, it.Value)
	}
	if diff := cmp.Diff(names, dv.Values); diff != "" || len(names) == 0 {
		t.Errorf("values and items disagree (-items +values):\n%s", diff)
	}
	return total
}

func simExtraMembers(t *testing.T, r simReads) {
	p, err := r.c.Recommendations.List(r.ctx, &upstream.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Data) != 1 || len(p.Data[0].Extra) == 0 {
		t.Fatalf("recommendation %+v: want extra members kept (the simulator sends some)", p.Data)
	}
}

func checkBudget(t *testing.T, b upstream.Budget, org string, client int64) {
	t.Helper()
	problems := []string{}
	if !strings.HasPrefix(b.ID, "bud_") || b.Name == "" || b.Status == "" || b.Period == "" || b.NumberOfPeriods < 1 {
		problems = append(problems, "identity")
	}
	if b.StartDate.IsZero() || b.StartDate.Day != 1 || b.EndDate.Time().Before(b.StartDate.Time()) {
		problems = append(problems, "dates")
	}
	if b.CreatedAt.IsZero() || b.UpdatedAt.Before(b.CreatedAt.Time) {
		problems = append(problems, "timestamps")
	}
	if b.OrganizationID != org || b.ServiceClientID != client {
		problems = append(problems, "organization")
	}
	if b.ExplorerReport == nil || b.ExplorerReport.ID != b.ExplorerReportID || b.Creator == nil || b.Creator.ID != b.CreatorID {
		problems = append(problems, "report or creator")
	}
	if len(b.Plannings) == 0 {
		problems = append(problems, "plannings")
	}
	for _, raw := range []json.RawMessage{b.BudgetType, b.StartingValue, b.CustomStartingValue, b.GrowthRate} {
		if len(raw) == 0 {
			problems = append(problems, "a nullable field is missing instead of null")
		}
	}
	if len(problems) > 0 {
		t.Errorf("budget %s: implausible %v: %+v", b.ID, problems, b)
	}
}

func TestSimPaging(t *testing.T) {
	t.Parallel()
	s, c := newSim(t)
	// The simulator's collection of each lister's records.
	collections := map[string]string{
		"Budgets": sim.CollectionBudgets, "Recommendations": sim.CollectionRecommendations,
		"Anomalies": sim.CollectionAnomalies, "Notifications": sim.CollectionNotifications,
	}
	for _, key := range []string{sim.DemoKey, sim.OtherOrgKey} {
		for _, l := range listers() {
			col := collections[l.name]
			want := s.IDs(key, col)
			if len(want) == 0 {
				t.Fatalf("IDs(%s, %s) is empty", key, col)
			}
			for _, size := range []int{1, 7, 50, 200, 0} {
				t.Run(fmt.Sprintf("%s/%s/%d", key, col, size), func(t *testing.T) {
					t.Parallel()
					got, errs := collect(l.all(as(t, key), c, size), 0)
					if len(errs) > 0 {
						t.Fatalf("errors: %v", errs)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("ids (-IDs +paged):\n%s", diff)
					}
				})
			}
		}
	}
	// The other organization's data is disjoint from organization one's.
	for _, col := range collections {
		for _, id := range s.IDs(sim.OtherOrgKey, col) {
			if slices.Contains(s.IDs(sim.DemoKey, col), id) {
				t.Errorf("%s id %s is in both organizations", col, id)
			}
		}
	}
}

func TestSimPagingCallCount(t *testing.T) {
	t.Parallel()
	s, c := newSim(t)
	n := len(s.IDs(sim.DemoKey, sim.CollectionRecommendations))
	for range c.Recommendations.All(as(t, sim.DemoKey), 7) {
	}
	if got, want := s.Calls(ops.ListRecommendations), int64((n+6)/7); got != want {
		t.Errorf("listRecommendations calls = %d for %d records at 7 a page, want %d", got, n, want)
	}
}

func newBudget(s *sim.Server, t *testing.T, c *upstream.Client, name string) *upstream.BudgetCreate {
	t.Helper()
	d, err := c.Budgets.Get(as(t, sim.DemoKey), s.IDs(sim.DemoKey, sim.CollectionBudgets)[0])
	if err != nil {
		t.Fatal(err)
	}
	return &upstream.BudgetCreate{
		Name: name, NumberOfPeriods: 3, StartDate: ymd(2026, 9, 1), ExplorerReportID: d.Budget.ExplorerReportID,
		LookbackPeriod: pointerTo(4), GrowthRate: json.RawMessage("5"),
	}
}

func TestSimBudgetRoundTrip(t *testing.T) {
	t.Parallel()
	s, c := newSim(t)
	ctx := as(t, sim.DemoKey)
	before := s.IDs(sim.DemoKey, sim.CollectionBudgets)

	in := newBudget(s, t, c, "Round trip")
	created, err := c.Budgets.Create(ctx, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkBudget(t, *created, "org-1001", 1001)
	if created.Name != in.Name || created.Status != "DRAFT" || created.Period != "MONTHLY" || created.NumberOfPeriods != 3 ||
		created.StartDate != in.StartDate || created.EndDate != ymd(2026, 11, 1) ||
		created.LookbackPeriod == nil || *created.LookbackPeriod != 4 || string(created.GrowthRate) != "5" ||
		!created.CreatedAt.Equal(created.UpdatedAt.Time) {
		t.Errorf("created budget does not reflect the request: %+v", created)
	}
	if got := s.IDs(sim.DemoKey, sim.CollectionBudgets); !cmp.Equal(append(slices.Clone(before), created.ID), got) {
		t.Errorf("after create, IDs = %v; want the old ones and %s at the end", got, created.ID)
	}

	got, err := c.Budgets.Get(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*created, got.Budget); diff != "" {
		t.Errorf("get after create (-created +got):\n%s", diff)
	}

	updated, err := c.Budgets.Update(ctx, created.ID, &upstream.BudgetUpdate{
		Name: pointerTo("Round trip, renamed"), Status: pointerTo("ACTIVE"), LookbackPeriod: upstream.Null[int](),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if updated.ID != created.ID || updated.Name != "Round trip, renamed" || updated.Status != "ACTIVE" || updated.LookbackPeriod != nil ||
		updated.NumberOfPeriods != 3 || !updated.UpdatedAt.After(created.UpdatedAt.Time) || !updated.CreatedAt.Equal(created.CreatedAt.Time) {
		t.Errorf("updated budget %+v does not reflect the update of %+v", updated, created)
	}
	got, err = c.Budgets.Get(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*updated, got.Budget); diff != "" {
		t.Errorf("get after update (-updated +got):\n%s", diff)
	}

	// Set a lookback again: Nullable's value form.
	updated, err = c.Budgets.Update(ctx, created.ID, &upstream.BudgetUpdate{LookbackPeriod: upstream.Set(6)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if updated.LookbackPeriod == nil || *updated.LookbackPeriod != 6 || updated.Name != "Round trip, renamed" {
		t.Errorf("after setting lookback 6: %+v", updated)
	}

	del, err := c.Budgets.Delete(ctx, created.ID)
	if err != nil || !del.Success {
		t.Fatalf("Delete = %+v, %v", del, err)
	}
	for name, call := range map[string]func() error{
		"Get":      func() error { return errOf(c.Budgets.Get(ctx, created.ID)) },
		"Actuals":  func() error { return errOf(c.Budgets.Actuals(ctx, created.ID)) },
		"Planning": func() error { return errOf(c.Budgets.Planning(ctx, created.ID)) },
		"Delete":   func() error { return errOf(c.Budgets.Delete(ctx, created.ID)) },
	} {
		if err := call(); !errors.Is(err, upstream.ErrNotFound) {
			t.Errorf("%s after delete: err = %v, want ErrNotFound", name, err)
		}
	}
	if got := s.IDs(sim.DemoKey, sim.CollectionBudgets); !cmp.Equal(before, got) {
		t.Errorf("after delete, IDs = %v, want %v", got, before)
	}
}

func TestSimRefusals(t *testing.T) {
	t.Parallel()
	s, c := newSim(t)
	mine := s.IDs(sim.DemoKey, sim.CollectionBudgets)[0]
	theirs := s.IDs(sim.OtherOrgKey, sim.CollectionBudgets)[0]
	create := newBudget(s, t, c, "Refused")
	tests := []struct {
		name       string
		key        string
		call       func(ctx context.Context) error
		want       error
		wantStatus int
		wantCode   string
	}{
		{"read-only key creates", sim.ReadOnlyKey, func(ctx context.Context) error { return errOf(c.Budgets.Create(ctx, create, nil)) }, upstream.ErrForbidden, 403, "forbidden_scope"},
		{"read-only key updates", sim.ReadOnlyKey, func(ctx context.Context) error {
			return errOf(c.Budgets.Update(ctx, mine, &upstream.BudgetUpdate{Name: pointerTo("x")}, nil))
		}, upstream.ErrForbidden, 403, "forbidden_scope"},
		{"read-only key deletes", sim.ReadOnlyKey, func(ctx context.Context) error { return errOf(c.Budgets.Delete(ctx, mine)) }, upstream.ErrForbidden, 403, "forbidden_scope"},
		{"unentitled key reads", sim.UnentitledKey, func(ctx context.Context) error { return errOf(c.Budgets.List(ctx, nil)) }, upstream.ErrForbidden, 403, "forbidden_entitlement"},
		{"unentitled key queries Explorer", sim.UnentitledKey, func(ctx context.Context) error {
			return errOf(c.Explorer.Summary(ctx, last30Days(s, "product_product_name")))
		}, upstream.ErrForbidden, 403, "forbidden_entitlement"},
		{"unknown key", "sk-not-a-real-key", func(ctx context.Context) error { return errOf(c.Recommendations.List(ctx, nil)) }, upstream.ErrUnauthorized, 401, "invalid_credentials"},
		{"other organization's budget", sim.DemoKey, func(ctx context.Context) error { return errOf(c.Budgets.Get(ctx, theirs)) }, upstream.ErrNotFound, 404, "not_found"},
		{"other organization's budget update", sim.DemoKey, func(ctx context.Context) error {
			return errOf(c.Budgets.Update(ctx, theirs, &upstream.BudgetUpdate{Name: pointerTo("mine now")}, nil))
		}, upstream.ErrNotFound, 404, "not_found"},
		{"other organization's budget delete", sim.DemoKey, func(ctx context.Context) error { return errOf(c.Budgets.Delete(ctx, theirs)) }, upstream.ErrNotFound, 404, "not_found"},
		{"unknown id", sim.DemoKey, func(ctx context.Context) error { return errOf(c.Budgets.Planning(ctx, "bud_doesnotexist")) }, upstream.ErrNotFound, 404, "not_found"},
		{"unknown dimension", sim.DemoKey, func(ctx context.Context) error { return errOf(c.Explorer.DimensionValues(ctx, "region")) }, upstream.ErrNotFound, 404, "not_found"},
		{"invalid create", sim.DemoKey, func(ctx context.Context) error {
			return errOf(c.Budgets.Create(ctx, &upstream.BudgetCreate{Name: "no report"}, nil))
		}, upstream.ErrInvalidRequest, 400, "validation_error"},
		{"invalid cursor", sim.DemoKey, func(ctx context.Context) error {
			return errOf(c.Budgets.List(ctx, &upstream.ListOptions{Cursor: "not-a-cursor"}))
		}, upstream.ErrInvalidRequest, 400, "invalid_cursor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.call(as(t, tc.key))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v (%v), want %v", err, matching(err), tc.want)
			}
			var ue *upstream.Error
			if !errors.As(err, &ue) || ue.Status != tc.wantStatus || ue.Code != tc.wantCode || ue.RequestID == "" || ue.Message == "" {
				t.Errorf("err = %#v, want status %d code %s with a message and request id", err, tc.wantStatus, tc.wantCode)
			}
			if strings.Contains(err.Error(), tc.key) {
				t.Errorf("error string carries the key: %v", err)
			}
			// docs/simulator.md fixes these two messages.
			if want := map[string]string{
				"forbidden_scope":     "API key is missing required scope: budgets:write",
				"invalid_credentials": "Invalid API key",
			}[tc.wantCode]; ue != nil && want != "" && ue.Message != want {
				t.Errorf("message = %q, want %q", ue.Message, want)
			}
		})
	}
	if got := s.IDs(sim.OtherOrgKey, sim.CollectionBudgets)[0]; got != theirs {
		t.Errorf("other organization's first budget changed to %s", got)
	}
}

func TestSimIdempotency(t *testing.T) {
	t.Parallel()
	s, c := newSim(t)
	ctx := as(t, sim.DemoKey)
	n := len(s.IDs(sim.DemoKey, sim.CollectionBudgets))
	opts := &upstream.WriteOptions{IdempotencyKey: "client-test-replay-1"}
	in := newBudget(s, t, c, "Idempotent")

	first, err := c.Budgets.Create(ctx, in, opts)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Budgets.Create(ctx, in, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("replay differs from the first answer (-first +replay):\n%s", diff)
	}
	if got := len(s.IDs(sim.DemoKey, sim.CollectionBudgets)); got != n+1 {
		t.Errorf("%d budgets after two creates with one key, want %d", got, n+1)
	}

	other := *in
	other.Name = "Idempotent, but another body"
	_, err = c.Budgets.Create(ctx, &other, opts)
	if !errors.Is(err, upstream.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	var ue *upstream.Error
	if !errors.As(err, &ue) || ue.Code != "idempotency_conflict" || ue.IdempotencyKey != opts.IdempotencyKey {
		t.Errorf("err = %#v, want idempotency_conflict carrying the key", err)
	}
	if got := len(s.IDs(sim.DemoKey, sim.CollectionBudgets)); got != n+1 {
		t.Errorf("%d budgets after the conflict, want %d", got, n+1)
	}

	// Keys are scoped per API key: organization two may use the same key.
	theirs, err := c.Budgets.Get(as(t, sim.OtherOrgKey), s.IDs(sim.OtherOrgKey, sim.CollectionBudgets)[0])
	if err != nil {
		t.Fatal(err)
	}
	in2 := *in
	in2.ExplorerReportID = theirs.Budget.ExplorerReportID
	b2, err := c.Budgets.Create(as(t, sim.OtherOrgKey), &in2, opts)
	if err != nil {
		t.Fatalf("same idempotency key in another organization: %v", err)
	}
	if b2.ID == first.ID || b2.OrganizationID == first.OrganizationID {
		t.Errorf("organization two got %s of %s", b2.ID, b2.OrganizationID)
	}

	// An update replays too: the same key twice moves updatedAt once.
	uopts := &upstream.WriteOptions{IdempotencyKey: "client-test-update-1"}
	u1, err := c.Budgets.Update(ctx, first.ID, &upstream.BudgetUpdate{Name: pointerTo("Renamed once")}, uopts)
	if err != nil {
		t.Fatal(err)
	}
	u2, err := c.Budgets.Update(ctx, first.ID, &upstream.BudgetUpdate{Name: pointerTo("Renamed once")}, uopts)
	if err != nil {
		t.Fatal(err)
	}
	if !u1.UpdatedAt.Equal(u2.UpdatedAt.Time) {
		t.Errorf("replayed update moved updatedAt from %v to %v", u1.UpdatedAt, u2.UpdatedAt)
	}
}

// A create whose connection drops after the simulator committed it is retried
// by the client with the same key, and the simulator replays the stored answer.
func TestSimCreateSurvivesDroppedAnswer(t *testing.T) {
	t.Parallel()
	s, c := newSimDroppingFirstAnswer(t, ops.CreateBudget)
	n := len(s.IDs(sim.DemoKey, sim.CollectionBudgets))

	b, err := c.Budgets.Create(as(t, sim.DemoKey), newBudget(s, t, c, "Dropped once"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Calls(ops.CreateBudget); got != 2 {
		t.Errorf("createBudget calls = %d, want 2 (dropped, then replayed)", got)
	}
	ids := s.IDs(sim.DemoKey, sim.CollectionBudgets)
	if len(ids) != n+1 || ids[len(ids)-1] != b.ID {
		t.Errorf("after the create: %d budgets, last %s; want %d, last %s", len(ids), ids[len(ids)-1], n+1, b.ID)
	}
}

// With faults at a rate, every create still makes exactly one budget.
func TestSimCreatesUnderFaults(t *testing.T) {
	t.Parallel()
	s := sim.New(sim.Options{})
	// The fault rates are far above the breaker's trip ratio: this test is
	// about retries, so the breaker is off.
	c := simClient(t, s, s, upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 25, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}),
		upstream.WithCircuitBreaker(upstream.BreakerSettings{}))
	ctx := as(t, sim.DemoKey)
	n := len(s.IDs(sim.DemoKey, sim.CollectionBudgets))
	in := newBudget(s, t, c, "")
	s.SetFaults(sim.Faults{DropAfter: 0.3, DropBefore: 0.2, Error500: 0.1, Ops: []string{ops.CreateBudget, ops.UpdateBudget}})

	const creates = 8
	var made []string
	for i := range creates {
		in.Name = fmt.Sprintf("Under faults %d", i)
		b, err := c.Budgets.Create(ctx, in, nil)
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		made = append(made, b.ID)
		u, err := c.Budgets.Update(ctx, b.ID, &upstream.BudgetUpdate{NumberOfPeriods: pointerTo(4)}, nil)
		if err != nil || u.NumberOfPeriods != 4 {
			t.Fatalf("update %d: %+v, %v", i, u, err)
		}
	}
	s.SetFaults(sim.Faults{})
	if calls := s.Calls(ops.CreateBudget); calls <= creates {
		t.Errorf("createBudget calls = %d: the faults never hit, the test proves nothing", calls)
	}
	ids := s.IDs(sim.DemoKey, sim.CollectionBudgets)
	if diff := cmp.Diff(made, ids[n:]); diff != "" || len(ids) != n+creates {
		t.Errorf("budgets made under faults (-returned +stored):\n%s", diff)
	}
}

func TestSimRetriesReadsUnderFaults(t *testing.T) {
	t.Parallel()
	s := sim.New(sim.Options{})
	// The fault rates are far above the breaker's trip ratio: this test is
	// about retries, so the breaker is off.
	c := simClient(t, s, s, upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 25, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}),
		upstream.WithCircuitBreaker(upstream.BreakerSettings{}))
	want := s.IDs(sim.DemoKey, sim.CollectionAnomalies)
	s.SetFaults(sim.Faults{DropBefore: 0.2, DropAfter: 0.2, Error500: 0.2})
	got, errs := collect(ids(c.Anomalies.All(as(t, sim.DemoKey), 20), func(a upstream.Anomaly) string { return a.AnomalyID }), 0)
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ids (-IDs +paged):\n%s", diff)
	}
	if calls, pages := s.Calls(ops.ListAnomalies), int64((len(want)+19)/20); calls <= pages {
		t.Errorf("listAnomalies calls = %d for %d pages: the faults never hit", calls, pages)
	}
}

func TestSimTimeoutAndRateLimit(t *testing.T) {
	t.Parallel()
	t.Run("latency beyond the timeout", func(t *testing.T) {
		t.Parallel()
		s := sim.New(sim.Options{})
		s.SetLatency(sim.Latency{Fixed: time.Second})
		c := simClient(t, s, s, upstream.WithTimeout(50*time.Millisecond), upstream.WithRetry(noRetry))
		_, err := c.Budgets.List(as(t, sim.DemoKey), nil)
		if !errors.Is(err, upstream.ErrUnavailable) {
			t.Errorf("err = %v, want ErrUnavailable", err)
		}
	})
	t.Run("429 with a Retry-After above the limit", func(t *testing.T) {
		t.Parallel()
		s := sim.New(sim.Options{})
		s.SetFaults(sim.Faults{RateLimit429: 1, RetryAfter: 30 * time.Second})
		c := simClient(t, s, s)
		_, err := c.Budgets.List(as(t, sim.DemoKey), nil)
		var ue *upstream.Error
		if !errors.Is(err, upstream.ErrRateLimited) || !errors.As(err, &ue) || ue.Code != "rate_limited" || ue.RetryAfter != 30*time.Second {
			t.Errorf("err = %#v, want 429 rate_limited with RetryAfter 30s", err)
		}
		if got := s.Calls(ops.ListBudgets); got != 1 {
			t.Errorf("listBudgets calls = %d, want 1", got)
		}
	})
}
