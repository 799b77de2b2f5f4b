package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/costgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// lister is one list operation of the client, with its iterator, reduced to
// record ids.
type lister struct {
	name string
	path string
	item func(i int) string // JSON of record i, whose id is "id-<i>"
	list func(ctx context.Context, c *upstream.Client, opts *upstream.ListOptions) (int, error)
	all  func(ctx context.Context, c *upstream.Client, pageSize int) iter.Seq2[string, error]
}

// ids turns a typed sequence into a sequence of ids (of the zero value too,
// so that collect can see a value yielded with an error).
func ids[T any](seq iter.Seq2[T, error], id func(T) string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for v, err := range seq {
			if !yield(id(v), err) {
				return
			}
		}
	}
}

// pageLen reduces a list call's answer to its record count.
func pageLen[T any](p *upstream.Page[T], err error) (int, error) {
	if err != nil {
		return 0, err
	}
	return len(p.Data), nil
}

// listerOf reduces one service's List and All, picked from the client by
// svc, to a lister whose records are told apart by id.
func listerOf[S, T any](name, path string, item func(i int) string, svc func(*upstream.Client) S,
	list func(S, context.Context, *upstream.ListOptions) (*upstream.Page[T], error),
	all func(S, context.Context, int) iter.Seq2[T, error], id func(T) string,
) lister {
	return lister{
		name: name, path: path, item: item,
		list: func(ctx context.Context, c *upstream.Client, o *upstream.ListOptions) (int, error) {
			return pageLen(list(svc(c), ctx, o))
		},
		all: func(ctx context.Context, c *upstream.Client, n int) iter.Seq2[string, error] {
			return ids(all(svc(c), ctx, n), id)
		},
	}
}

func listers() []lister {
	return []lister{
		listerOf("Recommendations", "/v1/recommendations",
			func(i int) string {
				return withID(recommendationJSON, `"recommendation_id":"rec-ec2-rightsize-001"`, fmt.Sprintf(`"recommendation_id":"id-%d","extra_%d":true`, i, i))
			},
			func(c *upstream.Client) *upstream.RecommendationsService { return c.Recommendations },
			(*upstream.RecommendationsService).List, (*upstream.RecommendationsService).All,
			func(r upstream.Recommendation) string { return r.RecommendationID }),
		listerOf("Anomalies", "/v1/anomalies",
			func(i int) string {
				return withID(anomalyJSON, `"anomaly_id":"anom-ec2-spike-001"`, fmt.Sprintf(`"anomaly_id":"id-%d"`, i))
			},
			func(c *upstream.Client) *upstream.AnomaliesService { return c.Anomalies },
			(*upstream.AnomaliesService).List, (*upstream.AnomaliesService).All,
			func(a upstream.Anomaly) string { return a.AnomalyID }),
		listerOf("Budgets", "/v1/budgets",
			func(i int) string { return withID(budgetJSON, `"id":"bud_1"`, fmt.Sprintf(`"id":"id-%d"`, i)) },
			func(c *upstream.Client) *upstream.BudgetsService { return c.Budgets },
			(*upstream.BudgetsService).List, (*upstream.BudgetsService).All,
			func(b upstream.Budget) string { return b.ID }),
		listerOf("Notifications", "/v1/notifications/scheduled",
			func(i int) string {
				return withID(notificationJSON, `"id":"clxnotif01"`, fmt.Sprintf(`"id":"id-%d"`, i))
			},
			func(c *upstream.Client) *upstream.NotificationsService { return c.Notifications },
			(*upstream.NotificationsService).ListScheduled, (*upstream.NotificationsService).AllScheduled,
			func(s upstream.ScheduledNotification) string { return s.ID }),
	}
}

// withID returns a complete record fixture with its id member replaced.
func withID(fixture, idMember, replacement string) string {
	if !strings.Contains(fixture, idMember) {
		panic("fixture has no " + idMember)
	}
	return strings.Replace(fixture, idMember, replacement, 1)
}

const emptyPage = `{"data":[],"pagination":{"limit":50,"has_more":false,"next_cursor":null}}`

func TestListOptions(t *testing.T) {
	t.Parallel()
	const odd = "eyJh/ZnRl+ciI6N30=?&x=1 %zz#frag"
	tests := []struct {
		name    string
		opts    *upstream.ListOptions
		want    url.Values // nil: refused before sending
		wantRaw string     // exact raw query when set
	}{
		{name: "nil options", opts: nil, want: url.Values{}, wantRaw: ""},
		{name: "zero options", opts: &upstream.ListOptions{}, want: url.Values{}, wantRaw: ""},
		{name: "limit 1", opts: &upstream.ListOptions{Limit: 1}, want: url.Values{"limit": {"1"}}, wantRaw: "limit=1"},
		{name: "limit 50", opts: &upstream.ListOptions{Limit: 50}, want: url.Values{"limit": {"50"}}},
		{name: "limit 200", opts: &upstream.ListOptions{Limit: 200}, want: url.Values{"limit": {"200"}}},
		{name: "limit 201", opts: &upstream.ListOptions{Limit: 201}},
		{name: "limit -1", opts: &upstream.ListOptions{Limit: -1}},
		{name: "cursor alone", opts: &upstream.ListOptions{Cursor: "eyJhZnRlciI6NTB9"}, want: url.Values{"cursor": {"eyJhZnRlciI6NTB9"}}},
		{name: "cursor needing escapes", opts: &upstream.ListOptions{Limit: 7, Cursor: odd}, want: url.Values{"limit": {"7"}, "cursor": {odd}}},
		{name: "bad limit with cursor", opts: &upstream.ListOptions{Limit: 1000, Cursor: "c"}},
	}
	forListers(t, func(t *testing.T, l lister) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, answer(http.StatusOK, emptyPage))
				c := newTestClient(t, f.URL)
				_, err := l.list(keyCtx(t), c, tc.opts)
				reqs := f.requests()
				if tc.want == nil {
					if diff := cmp.Diff([]string{"ErrInvalidRequest"}, matching(err)); diff != "" {
						t.Errorf("err = %v; sentinels (-want +got):\n%s", err, diff)
					}
					if len(reqs) != 0 {
						t.Errorf("upstream saw %d requests, want none", len(reqs))
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(reqs) != 1 {
					t.Fatalf("upstream saw %d requests, want 1", len(reqs))
				}
				if reqs[0].EscapedPath != basePath+l.path {
					t.Errorf("path = %s, want %s", reqs[0].EscapedPath, basePath+l.path)
				}
				if diff := cmp.Diff(tc.want, reqs[0].Query); diff != "" {
					t.Errorf("query (-want +got):\n%s", diff)
				}
				if tc.wantRaw != "" || len(tc.want) == 0 {
					if reqs[0].RawQuery != tc.wantRaw {
						t.Errorf("raw query = %q, want %q", reqs[0].RawQuery, tc.wantRaw)
					}
				}
			})
		}
	})
}

// pager serves n records of a lister in pages, with cursors that need
// escaping. It records nothing itself; newFake does.
func pager(t *testing.T, l lister, n int) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		limit := 50
		if s := r.URL.Query().Get("limit"); s != "" {
			var err error
			if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > 200 {
				writeJSON(w, http.StatusBadRequest, envelope("invalid_limit", s, "r"))
				return
			}
		}
		start := 0
		if cur := r.URL.Query().Get("cursor"); cur != "" {
			off, ok := strings.CutPrefix(cur, "after/?&= ")
			var err error
			if start, err = strconv.Atoi(off); !ok || err != nil {
				t.Errorf("cursor %q was not sent unchanged", cur)
				writeJSON(w, http.StatusBadRequest, envelope("invalid_cursor", cur, "r"))
				return
			}
		}
		end := min(start+limit, n)
		items := make([]string, 0, end-start)
		for i := start; i < end; i++ {
			items = append(items, l.item(i))
		}
		next := "null"
		if end < n {
			next = strconv.Quote("after/?&= " + strconv.Itoa(end))
		}
		writeJSON(w, http.StatusOK, fmt.Sprintf(`{"data":[%s],"pagination":{"limit":%d,"has_more":%t,"next_cursor":%s}}`,
			strings.Join(items, ","), limit, end < n, next))
	}
}

func wantIDs(from, to int) []string {
	out := []string{}
	for i := from; i < to; i++ {
		out = append(out, "id-"+strconv.Itoa(i))
	}
	return out
}

// forListers runs test for every lister, each in a parallel subtest.
func forListers(t *testing.T, test func(t *testing.T, l lister)) {
	for _, l := range listers() {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			test(t, l)
		})
	}
}

// walk runs l's All as ctx, a page size of pageSize, against a fake upstream
// answering with h, and returns what collect saw and the fake.
func walk(t *testing.T, ctx context.Context, l lister, h func(http.ResponseWriter, *http.Request, int),
	pageSize, stopAfter int, opts ...upstream.Option,
) ([]string, []error, *fakeUpstream) {
	t.Helper()
	f := newFake(t, h)
	c := newTestClient(t, f.URL, opts...)
	got, errs := collect(l.all(ctx, c, pageSize), stopAfter)
	return got, errs, f
}

// checkWalk checks a walk's sequence, and that it yielded exactly one error,
// wantErr, or none if wantErr is nil.
func checkWalk(t *testing.T, got []string, errs []error, want []string, wantErr error) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sequence (-want +got):\n%s", diff)
	}
	if wantErr == nil && len(errs) > 0 {
		t.Errorf("errors: %v", errs)
	}
	if wantErr != nil && (len(errs) != 1 || !errors.Is(errs[0], wantErr)) {
		t.Errorf("errors = %v, want one %v", errs, wantErr)
	}
}

// collect runs a sequence to its end or to stopAfter values, and returns the
// ids and errors in the order they came.
func collect(seq iter.Seq2[string, error], stopAfter int) (got []string, errs []error) {
	got = []string{}
	for id, err := range seq {
		if err != nil {
			errs = append(errs, err)
			if id != "" {
				got = append(got, "error with the value "+id)
			} else {
				got = append(got, "error")
			}
		} else {
			got = append(got, id)
		}
		if stopAfter > 0 && len(got) == stopAfter {
			break
		}
	}
	return got, errs
}

func TestAllWalksEveryPage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		records   int
		pageSize  int
		wantCalls int
		wantLimit string
	}{
		{name: "several pages", records: 23, pageSize: 5, wantCalls: 5, wantLimit: "5"},
		{name: "exact pages", records: 20, pageSize: 5, wantCalls: 4, wantLimit: "5"},
		{name: "page size 1", records: 3, pageSize: 1, wantCalls: 3, wantLimit: "1"},
		{name: "default page size", records: 120, pageSize: 0, wantCalls: 3, wantLimit: ""},
		{name: "largest page size", records: 201, pageSize: 200, wantCalls: 2, wantLimit: "200"},
		{name: "empty list", records: 0, pageSize: 5, wantCalls: 1, wantLimit: "5"},
	}
	forListers(t, func(t *testing.T, l lister) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				got, errs, f := walk(t, keyCtx(t), l, pager(t, l, tc.records), tc.pageSize, 0)
				checkWalk(t, got, errs, wantIDs(0, tc.records), nil)
				for i, r := range f.saw(t, tc.wantCalls) {
					if got := r.Query.Get("limit"); got != tc.wantLimit {
						t.Errorf("request %d: limit = %q, want %q", i+1, got, tc.wantLimit)
					}
					if _, has := r.Query["cursor"]; has != (i > 0) {
						t.Errorf("request %d: cursor present = %t, want %t", i+1, has, i > 0)
					}
				}
			})
		}
	})
}

func TestAllStopsWhenTheConsumerBreaks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		stopAfter int
		wantCalls int
	}{
		{"inside the first page", 3, 1},
		{"at the end of the first page", 5, 1},
		{"inside the second page", 7, 2},
	}
	forListers(t, func(t *testing.T, l lister) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				got, errs, f := walk(t, keyCtx(t), l, pager(t, l, 23), 5, tc.stopAfter)
				checkWalk(t, got, errs, wantIDs(0, tc.stopAfter), nil)
				f.wantCount(t, tc.wantCalls)
			})
		}
	})
}

func TestAllYieldsAFailingPage(t *testing.T) {
	t.Parallel()
	forListers(t, func(t *testing.T, l lister) {
		serve := pager(t, l, 23)
		got, errs, f := walk(t, keyCtx(t), l, func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 2 {
				writeJSON(w, http.StatusInternalServerError, envelope("internal_error", "boom", "r"))
				return
			}
			serve(w, r, n)
		}, 5, 0, upstream.WithRetry(noRetry))
		checkWalk(t, got, errs, append(wantIDs(0, 5), "error"), upstream.ErrUnavailable)
		f.wantCount(t, 2)
	})
}

func TestAllRefusesBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		ctx      func(t *testing.T) context.Context
		pageSize int
		want     error
	}{
		{"page size too large", keyCtx, 201, upstream.ErrInvalidRequest},
		{"negative page size", keyCtx, -1, upstream.ErrInvalidRequest},
		{"no key", func(t *testing.T) context.Context { return t.Context() }, 5, upstream.ErrNoAPIKey},
	}
	forListers(t, func(t *testing.T, l lister) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				got, errs, f := walk(t, tc.ctx(t), l, pager(t, l, 23), tc.pageSize, 0)
				checkWalk(t, got, errs, []string{"error"}, tc.want)
				f.wantCount(t, 0)
			})
		}
	})
}

func TestAllDetectsARepeatingCursor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cursors   []string // next_cursor of page 1, 2, …; the last one repeats forever
		wantCalls int
	}{
		{"same cursor every time", []string{"A"}, 2},
		{"cycle of two", []string{"A", "B", "A"}, 3},
		{"empty cursor with has_more", []string{""}, 1},
	}
	forListers(t, func(t *testing.T, l lister) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				got, errs, f := walk(t, keyCtx(t), l, func(w http.ResponseWriter, _ *http.Request, n int) {
					if n > 10 {
						t.Errorf("request %d: the iterator is looping", n)
						writeJSON(w, http.StatusOK, emptyPage)
						return
					}
					cur := tc.cursors[min(n, len(tc.cursors))-1]
					writeJSON(w, http.StatusOK, fmt.Sprintf(`{"data":[%s],"pagination":{"limit":1,"has_more":true,"next_cursor":%q}}`,
						l.item(n-1), cur))
				}, 1, 0)
				checkWalk(t, got, errs, append(wantIDs(0, tc.wantCalls), "error"), upstream.ErrBadResponse)
				f.wantCount(t, tc.wantCalls)
			})
		}
	})
}

// has_more is the contract's end marker: a cursor on the last page is ignored.
func TestAllStopsWhenHasMoreIsFalse(t *testing.T) {
	t.Parallel()
	forListers(t, func(t *testing.T, l lister) {
		got, errs, f := walk(t, keyCtx(t), l,
			answer(http.StatusOK, `{"data":[`+l.item(0)+`],"pagination":{"limit":50,"has_more":false,"next_cursor":"more?"}}`), 0, 0)
		checkWalk(t, got, errs, wantIDs(0, 1), nil)
		f.wantCount(t, 1)
	})
}

// The contract ends a list only where has_more is false: a page with
// has_more and no records (an upstream that filters may send one) is walked
// past. Before, the iterator failed on it. A run of MaxEmptyPages of them,
// which a consumer could not stop as nothing is yielded, still fails.
func TestAllGoesOnPastEmptyPages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		empty     int // pages with has_more and no records before the one record
		wantCalls int
		wantErr   error
	}{
		{name: "one empty page", empty: 1, wantCalls: 2},
		{name: "empty pages short of the run", empty: upstream.MaxEmptyPages - 1, wantCalls: upstream.MaxEmptyPages},
		{name: "a run of empty pages", empty: 1000, wantCalls: upstream.MaxEmptyPages, wantErr: upstream.ErrBadResponse},
	}
	forListers(t, func(t *testing.T, l lister) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				got, errs, f := walk(t, keyCtx(t), l, func(w http.ResponseWriter, _ *http.Request, n int) {
					if n <= tc.empty {
						writeJSON(w, http.StatusOK, fmt.Sprintf(`{"data":[],"pagination":{"limit":1,"has_more":true,"next_cursor":"c%d"}}`, n))
						return
					}
					writeJSON(w, http.StatusOK, `{"data":[`+l.item(0)+`],"pagination":{"limit":1,"has_more":false,"next_cursor":null}}`)
				}, 1, 0)
				want := wantIDs(0, 1)
				if tc.wantErr != nil {
					want = []string{"error"}
				}
				checkWalk(t, got, errs, want, tc.wantErr)
				f.wantCount(t, tc.wantCalls)
			})
		}
	})
}
