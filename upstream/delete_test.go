package upstream_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/ops"
	"github.com/costgw/gateway/upstream/sim"
	"github.com/google/go-cmp/cmp"
)

// A delete whose answer was lost after the upstream committed it is
// retried; the retry's 404 reports the delete that happened, not a failure.
// Before, a delete was never retried, and its caller saw "no response" for
// a budget that was gone.
func TestDeleteAfterLostAnswerIsAlreadyDeleted(t *testing.T) {
	t.Parallel()
	s, c := newSimDroppingFirstAnswer(t, ops.DeleteBudget)
	ids := s.IDs(sim.DemoKey, sim.CollectionBudgets)
	got, err := c.Budgets.Delete(as(t, sim.DemoKey), ids[0])
	if err != nil {
		t.Fatalf("err = %v, want the delete reported as done", err)
	}
	if diff := cmp.Diff(&upstream.DeleteResult{Success: true, AlreadyDeleted: true}, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if n := s.Calls(ops.DeleteBudget); n != 2 {
		t.Errorf("deleteBudget calls = %d, want 2 (dropped after commit, then 404)", n)
	}
	if after := s.IDs(sim.DemoKey, sim.CollectionBudgets); len(after) != len(ids)-1 {
		t.Errorf("%d budgets after the delete, want %d", len(after), len(ids)-1)
	}
	// A later delete of the same budget is a plain 404: no answer was lost.
	if _, err := c.Budgets.Delete(as(t, sim.DemoKey), ids[0]); !errors.Is(err, upstream.ErrNotFound) {
		t.Errorf("deleting it again: %v, want ErrNotFound", err)
	}
}

// A 5xx answer is as ambiguous as none: a proxy's 502 or 504, or the
// upstream failing after it committed, may come after the budget is gone.
// So a retry's 404 after one reports the delete that happened. Before,
// only a lost answer counted, and a delete whose first answer was a
// proxy's 504 failed with ErrNotFound for a budget it had removed. A 429
// refused the attempt before anything was done: a 404 after it is one.
func TestDeleteNotFoundAfterAServerError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		first func(w http.ResponseWriter)
		gone  bool                        // want AlreadyDeleted; else ErrNotFound
		retry func(w http.ResponseWriter) // the second answer; a 404 not_found when nil
	}{
		{"502 of a proxy", func(w http.ResponseWriter) { writeJSON(w, http.StatusBadGateway, "<html>Bad Gateway</html>") }, true, nil},
		{"504 of a proxy", func(w http.ResponseWriter) { writeJSON(w, http.StatusGatewayTimeout, "") }, true, nil},
		{"503 of the upstream", func(w http.ResponseWriter) {
			writeJSON(w, http.StatusServiceUnavailable, envelope("service_unavailable", "down", "r1"))
		}, true, nil},
		{"500 of the upstream", func(w http.ResponseWriter) {
			writeJSON(w, http.StatusInternalServerError, envelope("internal_error", "oops", "r1"))
		}, true, nil},
		{"429", func(w http.ResponseWriter) {
			writeJSON(w, http.StatusTooManyRequests, envelope("rate_limited", "slow down", "r1"))
		}, false, nil},
		// The contract publishes no code for an unknown resource: a 404 is
		// read by its status, whatever its code says or without a body.
		// Before, only not_found counted, and these failed as unknown.
		{"502, then a 404 of another code", func(w http.ResponseWriter) { writeJSON(w, http.StatusBadGateway, "") }, true,
			func(w http.ResponseWriter) {
				writeJSON(w, http.StatusNotFound, envelope("resource_missing", "No such budget", "r2"))
			}},
		{"502, then a bare 404", func(w http.ResponseWriter) { writeJSON(w, http.StatusBadGateway, "") }, true,
			func(w http.ResponseWriter) { writeJSON(w, http.StatusNotFound, "") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, n int) {
				switch {
				case n == 1:
					tc.first(w)
				case tc.retry != nil:
					tc.retry(w)
				default:
					writeJSON(w, http.StatusNotFound, envelope("not_found", "Budget not found", "r2"))
				}
			})
			c := newTestClient(t, f.URL)
			got, err := c.Budgets.Delete(keyCtx(t), "bud_1")
			if n := f.count(); n != 2 {
				t.Errorf("upstream saw %d requests, want 2", n)
			}
			if !tc.gone {
				if !errors.Is(err, upstream.ErrNotFound) {
					t.Fatalf("err = %v, want ErrNotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want the delete reported as done", err)
			}
			if diff := cmp.Diff(&upstream.DeleteResult{Success: true, AlreadyDeleted: true}, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// A 404 with nothing ambiguous before it is ErrNotFound, as for any read.
func TestDeleteNotFoundIsNotFound(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(http.StatusNotFound, envelope("not_found", "Budget not found", "r2")))
	c := newTestClient(t, f.URL)
	_, err := c.Budgets.Delete(keyCtx(t), "bud_1")
	if !errors.Is(err, upstream.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if n := f.count(); n != 1 {
		t.Errorf("upstream saw %d requests, want 1", n)
	}
}
