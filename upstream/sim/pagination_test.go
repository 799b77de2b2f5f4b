package sim_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/upstream/sim"
)

type collection struct {
	name, path, idField string
}

func collections() []collection {
	return []collection{
		{"budgets", "/v1/budgets", "id"},
		{"recommendations", "/v1/recommendations", "recommendation_id"},
		{"anomalies", "/v1/anomalies", "anomaly_id"},
		{"notifications", "/v1/notifications/scheduled", "id"},
	}
}

// pageThrough follows next_cursor to the end and returns the ids seen.
func pageThrough(t *testing.T, e *env, key string, c collection, limit int) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatal("pagination does not end")
		}
		q := url.Values{}
		if limit > 0 {
			q.Set("limit", itoa(limit))
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		path := c.path
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		r := e.get(t, path, key)
		body := r.obj(t)
		data, ok := body["data"].([]any)
		if r.status != http.StatusOK || !ok {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		p := body["pagination"].(map[string]any)
		want := limit
		if want == 0 {
			want = 50
		}
		if p["limit"] != float64(want) {
			t.Errorf("pagination.limit %v, want %d", p["limit"], want)
		}
		if len(data) > want {
			t.Errorf("page has %d items, limit %d", len(data), want)
		}
		for _, item := range data {
			ids = append(ids, item.(map[string]any)[c.idField].(string))
		}
		hasMore := p["has_more"].(bool)
		next, isString := p["next_cursor"].(string)
		if hasMore != isString {
			t.Fatalf("has_more %v but next_cursor %#v", hasMore, p["next_cursor"])
		}
		if !hasMore {
			if p["next_cursor"] != nil {
				t.Errorf("last page next_cursor %#v, want null", p["next_cursor"])
			}
			return ids
		}
		if len(data) != want {
			t.Errorf("non-final page has %d items, want %d", len(data), want)
		}
		cursor = next
	}
}

func TestPaginationVisitsEveryID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	wantSizes := map[string]map[string]int{
		sim.DemoKey:     {"budgets": 24, "recommendations": 340, "anomalies": 260, "notifications": 36},
		sim.OtherOrgKey: {"budgets": 9, "recommendations": 120, "anomalies": 80, "notifications": 23},
	}
	for key, sizes := range wantSizes {
		for _, c := range collections() {
			want := e.sim.IDs(key, c.name)
			if len(want) != sizes[c.name] {
				t.Errorf("%s %s: %d records, want %d", key, c.name, len(want), sizes[c.name])
			}
			for _, limit := range []int{0, 1, 7, 50, 200} {
				t.Run(key+"/"+c.name+"/limit "+itoa(limit), func(t *testing.T) {
					got := pageThrough(t, e, key, c, limit)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("paged ids differ from IDs() (-want +got):\n%s", diff)
					}
				})
			}
		}
	}
	t.Run("notifications total", func(t *testing.T) {
		p := e.get(t, "/v1/notifications/scheduled?limit=5").obj(t)["pagination"].(map[string]any)
		if p["total"] != float64(36) {
			t.Errorf("total %v, want 36", p["total"])
		}
	})
	t.Run("unknown key and collection", func(t *testing.T) {
		if ids := e.sim.IDs("nope", "budgets"); ids != nil {
			t.Errorf("IDs(unknown key) = %v", ids)
		}
		if ids := e.sim.IDs(sim.DemoKey, "reports"); ids != nil {
			t.Errorf("IDs(unknown collection) = %v", ids)
		}
	})
}

func TestPaginationErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	cases := []struct {
		name  string
		query string
		code  string
	}{
		{"limit 0", "limit=0", "invalid_limit"},
		{"limit 201", "limit=201", "invalid_limit"},
		{"limit x", "limit=x", "invalid_limit"},
		{"limit empty", "limit=", "invalid_limit"},
		{"limit negative", "limit=-1", "invalid_limit"},
		{"limit fraction", "limit=1.5", "invalid_limit"},
		{"limit plus sign", "limit=%2B5", "invalid_limit"},
		{"limit huge", "limit=99999999999999999999", "invalid_limit"},
		{"cursor empty", "cursor=", "invalid_cursor"},
		{"cursor not base64", "cursor=!!!", "invalid_cursor"},
		{"cursor padded", "cursor=" + url.QueryEscape(base64.URLEncoding.EncodeToString([]byte(`{"after":1}`))), "invalid_cursor"},
		{"cursor not json", "cursor=" + b64("after=1"), "invalid_cursor"},
		{"cursor offset form", "cursor=" + b64(`{"offset":50}`), "invalid_cursor"},
		{"cursor extra field", "cursor=" + b64(`{"after":1,"x":2}`), "invalid_cursor"},
		{"cursor negative", "cursor=" + b64(`{"after":-1}`), "invalid_cursor"},
		{"cursor string", "cursor=" + b64(`{"after":"1"}`), "invalid_cursor"},
		{"cursor fraction", "cursor=" + b64(`{"after":1.5}`), "invalid_cursor"},
		{"cursor overflow", "cursor=" + b64(`{"after":99999999999999999999}`), "invalid_cursor"},
		{"cursor spaces", "cursor=" + b64(`{ "after": 1 }`), "invalid_cursor"},
	}
	for _, c := range collections() {
		for _, tc := range cases {
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				e.get(t, c.path+"?"+tc.query).wantError(t, http.StatusBadRequest, tc.code)
			})
		}
	}
	t.Run("limit 200 and 1 are fine", func(t *testing.T) {
		for _, q := range []string{"limit=1", "limit=200", "limit=007"} {
			if r := e.get(t, "/v1/anomalies?"+q); r.status != http.StatusOK {
				t.Errorf("%s: %d %s", q, r.status, r.body)
			}
		}
	})
	t.Run("cursor past the end", func(t *testing.T) {
		body := e.get(t, "/v1/anomalies?cursor="+b64(`{"after":100000}`)).obj(t)
		if diff := cmp.Diff(map[string]any{
			"data":       []any{},
			"pagination": map[string]any{"limit": float64(50), "has_more": false, "next_cursor": nil},
		}, body); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

// TestPaginationDeleteBetweenPages deletes records around the page boundary
// between two page requests; the keyset cursor must neither skip nor repeat.
func TestPaginationDeleteBetweenPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sim.Options{})
	all := e.sim.IDs(sim.DemoKey, "budgets")
	first := e.get(t, "/v1/budgets?limit=5").obj(t)
	cursor := first["pagination"].(map[string]any)["next_cursor"].(string)
	// Delete the last record of page one and the first of page two.
	for _, id := range []string{all[4], all[5]} {
		if r := e.do(t, req{method: http.MethodDelete, path: "/v1/budgets/" + id, key: sim.DemoKey}); r.status != http.StatusOK {
			t.Fatalf("delete %s: %d %s", id, r.status, r.body)
		}
	}
	second := e.get(t, "/v1/budgets?limit=5&cursor="+cursor).data(t).([]any)
	var got []string
	for _, b := range second {
		got = append(got, b.(map[string]any)["id"].(string))
	}
	if diff := cmp.Diff(all[6:11], got); diff != "" {
		t.Errorf("second page after deletes (-want +got):\n%s", diff)
	}
	// A full walk sees exactly the remaining budgets.
	want := append(append([]string{}, all[:4]...), all[6:]...)
	if diff := cmp.Diff(want, pageThrough(t, e, sim.DemoKey, collections()[0], 3)); diff != "" {
		t.Errorf("walk after deletes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, e.sim.IDs(sim.DemoKey, "budgets")); diff != "" {
		t.Errorf("IDs after deletes (-want +got):\n%s", diff)
	}
}
