package loaders

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/graph/cost"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/ops"
)

// listOf is a fake list operation of ints: page i (from 0) has
// records(i) records, and a next page while i+1 < pages (0: no end).
type listOf struct {
	records func(i int) int
	pages   int
	repeat  bool // every next_cursor is the same
	asked   []int
}

func (l *listOf) fetch(_ context.Context, o *upstream.ListOptions) (*upstream.Page[int], error) {
	i := len(l.asked)
	l.asked = append(l.asked, o.Limit)
	p := &upstream.Page[int]{Data: make([]int, l.records(i))}
	if l.pages == 0 || i+1 < l.pages {
		next := "c" + strconv.Itoa(i+1)
		if l.repeat {
			next = "c"
		}
		p.Pagination.HasMore, p.Pagination.NextCursor = true, &next
	}
	return p, nil
}

// A scan for node(id:) makes at most the cost estimate's cost.MaxScanPages
// calls, whatever page size the upstream applies. Before, it was bounded by
// records alone: an upstream applying pages of 10 made it 100 calls.
func TestScanIsBoundedByCalls(t *testing.T) {
	t.Parallel()
	pagesOf := func(n int) func(int) int { return func(int) int { return n } }
	tests := []struct {
		name        string
		list        listOf
		wantCalls   int
		wantRecords int
		wantErr     bool
	}{
		{name: "full pages", list: listOf{records: pagesOf(200)}, wantCalls: 5, wantRecords: 1000},
		{name: "the upstream applies pages of 10", list: listOf{records: pagesOf(10)}, wantCalls: 5, wantRecords: 50},
		{name: "pages larger than asked", list: listOf{records: pagesOf(300)}, wantCalls: 4, wantRecords: cost.MaxScanPages * cost.PageSize},
		{name: "the list ends", list: listOf{records: pagesOf(10), pages: 3}, wantCalls: 3, wantRecords: 30},
		{name: "empty pages", list: listOf{records: func(i int) int { return 7 * (i % 2) }}, wantCalls: 5, wantRecords: 14},
		{name: "a repeating cursor", list: listOf{records: pagesOf(10), repeat: true}, wantCalls: 2, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := scan(ops.ListBudgets, tc.list.fetch)(t.Context(), struct{}{})
			if tc.wantErr != errors.Is(err, upstream.ErrBadResponse) || !tc.wantErr && err != nil {
				t.Fatalf("err = %v, want an ErrBadResponse: %t", err, tc.wantErr)
			}
			if len(got) != tc.wantRecords {
				t.Errorf("%d records, want %d", len(got), tc.wantRecords)
			}
			want := make([]int, tc.wantCalls)
			for i := range want {
				want[i] = upstream.MaxPageSize
			}
			if diff := cmp.Diff(want, tc.list.asked); diff != "" {
				t.Errorf("limits asked (-want +got):\n%s", diff)
			}
		})
	}
}

// The reviewer's case end to end: node(id:) of a User reads the budgets
// through the client from an upstream that applies pages of one record.
func TestBudgetListOfShortPages(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if n > 2*cost.MaxScanPages {
			http.Error(w, "enough", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[%s],"pagination":{"limit":1,"has_more":true,"next_cursor":"c%d"}}`, budgetJSON(int(n)), n)
	}))
	t.Cleanup(srv.Close)
	c, err := upstream.NewClient(srv.URL, upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	budgets, err := New(c, Options{}).BudgetList(upstream.WithAPIKey(t.Context(), "k"))
	if err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != cost.MaxScanPages || len(budgets) != cost.MaxScanPages {
		t.Errorf("%d budgets in %d calls, want %d in %d", len(budgets), n, cost.MaxScanPages, cost.MaxScanPages)
	}
}

// budgetJSON is a complete budget record.
func budgetJSON(i int) string {
	return fmt.Sprintf(`{"id":"b%d","name":"n","targetType":"BUDGET","period":"MONTHLY","status":"ACTIVE","numberOfPeriods":1,`+
		`"startDate":"2026-01-01","endDate":"2026-01-01","normalizationPeriod":false,"organizationId":"o","serviceClientId":1,`+
		`"creatorId":"u","explorerReportId":"r","createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:00.000Z"}`, i)
}
