package resolvers

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/graph/cost"
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/ops"
)

// recommendation is a complete recommendation record with id id.
func recommendation(id string) string {
	return `{"recommendation_id":"` + id + `","recommendation_name":"Rightsize","estimated_monthly_savings":1.5,` +
		`"implementation_effort":"Low","category":"Compute","action_type":"Rightsize","account_name":"Production",` +
		`"region":"us-east-1","resource_id":"i-1"}`
}

// hostile serves recommendations pages from answer, which gets the request's
// cursor and limit and the number of the request, and counts requests.
func hostile(t *testing.T, answer func(cursor string, limit, n int) (records int, hasMore bool, next *string)) (*upstream.Client, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(calls.Add(1))
		if n > 1000 {
			t.Errorf("request %d: the walk does not end", n)
			http.Error(w, "enough", http.StatusServiceUnavailable)
			return
		}
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		cursor := r.URL.Query().Get("cursor")
		records, more, next := answer(cursor, limit, n)
		items := make([]string, records)
		for i := range items {
			items[i] = recommendation(fmt.Sprintf("%s/%d", cursor, i))
		}
		nc := "null"
		if next != nil {
			nc = strconv.Quote(*next)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[%s],"pagination":{"limit":%d,"has_more":%t,"next_cursor":%s}}`,
			strings.Join(items, ","), limit, more, nc)
	}))
	t.Cleanup(srv.Close)
	c, err := upstream.NewClient(srv.URL, upstream.WithRetry(upstream.RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	return c, &calls
}

func ptr[T any](v T) *T { return &v }

// A connection's walk of upstream pages always ends, in no more calls than
// its cost estimate charged: before, a repeating cursor made first: 500
// walk 250 pages of 2 records, and empty pages with has_more never ended.
// Empty pages with new cursors are not an error: the walk ends at the
// bound, with hasNextPage.
func TestConnectionPagingAlwaysEnds(t *testing.T) {
	t.Parallel()
	codec := relay.NewCodec([]byte("test"))
	tests := []struct {
		name      string
		first     int
		answer    func(cursor string, limit, n int) (int, bool, *string)
		wantErr   bool
		wantItems int
		wantNext  bool
		wantCalls int64
	}{
		{
			name: "repeating cursor", first: 500,
			answer:  func(string, int, int) (int, bool, *string) { return 2, true, ptr("A") },
			wantErr: true, wantCalls: 2,
		},
		{
			name: "cycle of two cursors", first: 500,
			answer: func(c string, _, _ int) (int, bool, *string) {
				if c == "A" {
					return 2, true, ptr("B")
				}
				return 2, true, ptr("A")
			},
			wantErr: true, wantCalls: 3,
		},
		{
			name: "empty pages with has_more", first: 500,
			answer:    func(_ string, _, n int) (int, bool, *string) { return 0, true, ptr("c" + strconv.Itoa(n)) },
			wantItems: 0, wantNext: true, wantCalls: 3,
		},
		{
			name: "an empty page with a cursor seen before", first: 500,
			answer: func(c string, _, _ int) (int, bool, *string) {
				if c == "" {
					return 2, true, ptr("A")
				}
				return 0, true, ptr("A")
			},
			wantErr: true, wantCalls: 2,
		},
		{
			name: "has_more without a cursor", first: 50,
			answer:  func(string, int, int) (int, bool, *string) { return 2, true, nil },
			wantErr: true, wantCalls: 1,
		},
		{
			name: "short pages stop at the estimate", first: 500,
			answer: func(_ string, _, n int) (int, bool, *string) { return 10, true, ptr("c" + strconv.Itoa(n)) },
			// ceil(500/200) = 3 pages of 10 records, and more to come.
			wantItems: 30, wantNext: true, wantCalls: 3,
		},
		{
			name: "full pages", first: 500,
			answer: func(_ string, limit, n int) (int, bool, *string) {
				return limit, true, ptr("c" + strconv.Itoa(n))
			},
			wantItems: 500, wantNext: true, wantCalls: 3,
		},
		{
			name: "the list ends", first: 500,
			answer: func(_ string, _, n int) (int, bool, *string) {
				if n == 2 {
					return 7, false, nil
				}
				return 200, true, ptr("c" + strconv.Itoa(n))
			},
			wantItems: 207, wantNext: false, wantCalls: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, calls := hostile(t, tc.answer)
			ctx := upstream.WithAPIKey(t.Context(), "k")
			w, err := page(ctx, codec, connRecommendations, &tc.first, nil, c.Recommendations.List)
			if got := calls.Load(); got != tc.wantCalls {
				t.Errorf("upstream calls = %d, want %d (the estimate allows %d)", got, tc.wantCalls, cost.Pages(tc.first, false))
			}
			if tc.wantErr {
				var ue *upstream.Error
				if !errors.Is(err, upstream.ErrBadResponse) || !errors.As(err, &ue) || ue.Op != ops.ListRecommendations {
					t.Fatalf("err = %v, want an ErrBadResponse of listRecommendations", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(w.items) != tc.wantItems || w.info.HasNextPage != tc.wantNext {
				t.Errorf("got %d records, hasNextPage %t; want %d, %t", len(w.items), w.info.HasNextPage, tc.wantItems, tc.wantNext)
			}
		})
	}
}

// Resuming from a cursor walks from where the last page ended: after a
// bound was reached on short pages, the endCursor fetches the next page.
func TestConnectionResumesAfterTheBound(t *testing.T) {
	t.Parallel()
	codec := relay.NewCodec([]byte("test"))
	c, calls := hostile(t, func(cursor string, _, n int) (int, bool, *string) {
		return 10, true, ptr("c" + strconv.Itoa(n))
	})
	ctx := upstream.WithAPIKey(t.Context(), "k")
	first := 300
	w, err := page(ctx, codec, connRecommendations, &first, nil, c.Recommendations.List)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.items) != 20 || !w.info.HasNextPage || calls.Load() != 2 {
		t.Fatalf("first window: %d records, hasNextPage %t, %d calls; want 20, true, 2", len(w.items), w.info.HasNextPage, calls.Load())
	}
	last := w.items[len(w.items)-1].RecommendationID
	w, err = page(ctx, codec, connRecommendations, &first, w.info.EndCursor, c.Recommendations.List)
	if err != nil {
		t.Fatal(err)
	}
	// ceil((300 + 199) / 200) = 3 more pages, starting with the one after c2.
	if len(w.items) != 30 || calls.Load() != 5 {
		t.Fatalf("second window: %d records in %d calls in all; want 30, 5", len(w.items), calls.Load())
	}
	if got := w.items[0].RecommendationID; got != "c2/0" || last != "c1/9" {
		t.Errorf("second window starts at %s after %s; want c2/0 after c1/9", got, last)
	}
}

// The pages a connection may walk are those its cost estimate charged:
// resuming skips at most 199 records of the first page, so first records
// after a cursor fit in ceil((first + 199) / 200) full pages.
func TestPagesAllowed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		first    int
		resuming bool
		want     int
	}{
		{1, false, 1}, {200, false, 1}, {201, false, 2}, {500, false, 3},
		{1, true, 1}, {2, true, 2}, {200, true, 2}, {201, true, 2}, {202, true, 3}, {500, true, 4},
	}
	for _, tc := range tests {
		if got := cost.Pages(tc.first, tc.resuming); got != tc.want {
			t.Errorf("cost.Pages(%d, %t) = %d, want %d", tc.first, tc.resuming, got, tc.want)
		}
	}
}

// An upstream that filters may answer a page with has_more and no records.
// Before, the connection failed on it (UPSTREAM_BAD_RESPONSE); now it walks
// past it within the pages its estimate charged, and when the bound comes
// first, answers what it found with hasNextPage and an endCursor that goes
// on after the empty pages, even with no record at all.
func TestConnectionGoesOnPastEmptyPages(t *testing.T) {
	t.Parallel()
	codec := relay.NewCodec([]byte("test"))
	// Three records, two empty pages, then two records and the end.
	pages := map[string]struct {
		records int
		next    string
	}{"": {3, "e1"}, "e1": {0, "e2"}, "e2": {0, "p2"}, "p2": {2, ""}}
	type window struct {
		items    []string
		next     bool
		endAfter string // the upstream cursor endCursor resumes from
	}
	tests := []struct {
		name  string
		first int
		after *relay.Cursor
		want  []window // successive windows, each after the last's endCursor
		calls int64
	}{
		{
			name: "within the bound", first: 250, // 2 pages, none resumed
			want:  []window{{items: []string{"/0", "/1", "/2"}, next: true, endAfter: "e2"}, {items: []string{"p2/0", "p2/1"}}},
			calls: 2 + 2, // "", e1; then e2, p2
		},
		{
			name: "no record before the bound", first: 5, after: &relay.Cursor{Upstream: "e1"},
			want:  []window{{next: true, endAfter: "p2"}, {items: []string{"p2/0", "p2/1"}}},
			calls: 2 + 1, // e1, e2; then p2
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, calls := hostile(t, func(cursor string, _, _ int) (int, bool, *string) {
				p := pages[cursor]
				if p.next == "" {
					return p.records, false, nil
				}
				return p.records, true, ptr(p.next)
			})
			ctx := upstream.WithAPIKey(t.Context(), "k")
			var after *string
			if tc.after != nil {
				after = ptr(codec.Encode(connRecommendations.name, *tc.after))
			}
			for i, want := range tc.want {
				w, err := page(ctx, codec, connRecommendations, &tc.first, after, c.Recommendations.List)
				if err != nil {
					t.Fatalf("window %d: %v", i, err)
				}
				got := window{next: w.info.HasNextPage}
				for _, r := range w.items {
					got.items = append(got.items, r.RecommendationID)
				}
				if w.info.EndCursor != nil {
					end, err := codec.Decode(connRecommendations.name, *w.info.EndCursor)
					if err != nil {
						t.Fatalf("window %d: endCursor: %v", i, err)
					}
					if len(w.at) > 0 && w.at[len(w.at)-1] != end {
						t.Errorf("window %d: endCursor %+v is not the last edge's %+v", i, end, w.at[len(w.at)-1])
					}
					if want.next {
						got.endAfter = end.Upstream
					}
				}
				if want.next && w.info.EndCursor == nil {
					t.Fatalf("window %d: hasNextPage without an endCursor", i)
				}
				if diff := cmp.Diff(want, got, cmp.AllowUnexported(window{})); diff != "" {
					t.Errorf("window %d (-want +got):\n%s", i, diff)
				}
				after = w.info.EndCursor
			}
			if got := calls.Load(); got != tc.calls {
				t.Errorf("upstream calls = %d, want %d", got, tc.calls)
			}
		})
	}
}
