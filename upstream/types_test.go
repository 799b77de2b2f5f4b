package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

func TestIDsArePathEscaped(t *testing.T) {
	t.Parallel()
	ops := []struct {
		name   string
		suffix string
		call   func(ctx context.Context, c *upstream.Client, id string) error
	}{
		{"Get", "", func(ctx context.Context, c *upstream.Client, id string) error { return errOf(c.Budgets.Get(ctx, id)) }},
		{"Update", "", func(ctx context.Context, c *upstream.Client, id string) error {
			return errOf(c.Budgets.Update(ctx, id, &upstream.BudgetUpdate{}, nil))
		}},
		{"Delete", "", func(ctx context.Context, c *upstream.Client, id string) error {
			return errOf(c.Budgets.Delete(ctx, id))
		}},
		{"Actuals", "/actuals", func(ctx context.Context, c *upstream.Client, id string) error {
			return errOf(c.Budgets.Actuals(ctx, id))
		}},
		{"Planning", "/planning", func(ctx context.Context, c *upstream.Client, id string) error {
			return errOf(c.Budgets.Planning(ctx, id))
		}},
		{"DimensionValues", "/values", func(ctx context.Context, c *upstream.Client, id string) error {
			return errOf(c.Explorer.DimensionValues(ctx, id))
		}},
	}
	ids := []struct {
		name        string
		id          string
		wantEscaped string // "" means refused before sending
	}{
		{name: "plain", id: "bud_1", wantEscaped: "bud_1"},
		{name: "slash", id: "a/b", wantEscaped: "a%2Fb"},
		{name: "question mark", id: "a?limit=1", wantEscaped: "a%3Flimit=1"},
		{name: "space", id: "a b", wantEscaped: "a%20b"},
		{name: "percent", id: "100%", wantEscaped: "100%25"},
		{name: "hash", id: "a#b", wantEscaped: "a%23b"},
		{name: "all of them", id: "x/y?z w#%", wantEscaped: "x%2Fy%3Fz%20w%23%25"},
		{name: "unicode", id: "bü", wantEscaped: "b%C3%BC"},
		{name: "empty", id: ""},
		{name: "dot", id: "."},
		{name: "dot dot", id: ".."},
	}
	for _, op := range ops {
		for _, tc := range ids {
			t.Run(op.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, answer(http.StatusOK, `{"data":{"budget":`+budgetJSON+`}}`))
				c := newTestClient(t, f.URL)
				err := op.call(keyCtx(t), c, tc.id)
				reqs := f.requests()
				if tc.wantEscaped == "" {
					if !errors.Is(err, upstream.ErrInvalidRequest) {
						t.Errorf("err = %v, want ErrInvalidRequest", err)
					}
					if len(reqs) != 0 {
						t.Errorf("upstream saw %s, want no request", reqs[0].EscapedPath)
					}
					return
				}
				if len(reqs) != 1 {
					t.Fatalf("upstream saw %d requests (err %v), want 1", len(reqs), err)
				}
				prefix := basePath + "/v1/budgets/"
				if op.name == "DimensionValues" {
					prefix = basePath + "/v1/explorer/dimensions/"
				}
				if want := prefix + tc.wantEscaped + op.suffix; reqs[0].EscapedPath != want {
					t.Errorf("path = %s, want %s", reqs[0].EscapedPath, want)
				}
				if want := prefix + tc.id + op.suffix; reqs[0].Path != want {
					t.Errorf("unescaped path = %q, want %q", reqs[0].Path, want)
				}
				if reqs[0].RawQuery != "" {
					t.Errorf("query = %q, want none", reqs[0].RawQuery)
				}
			})
		}
	}
}

func TestOpenObjectsKeepExtraMembers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        string
		decode    func([]byte) (any, map[string]json.RawMessage, error)
		wantExtra map[string]json.RawMessage
	}{
		{
			name: "recommendation with extras",
			in:   recommendationJSON[:len(recommendationJSON)-1] + `,"new_field":"x","nested":{"a":[1,{"b":null}]},"flag":false}`,
			decode: func(b []byte) (any, map[string]json.RawMessage, error) {
				var r upstream.Recommendation
				err := json.Unmarshal(b, &r)
				return r, r.Extra, err
			},
			wantExtra: map[string]json.RawMessage{
				"new_field": json.RawMessage(`"x"`), "nested": json.RawMessage(`{"a":[1,{"b":null}]}`), "flag": json.RawMessage(`false`),
			},
		},
		{
			name: "recommendation without extras",
			in:   recommendationJSON,
			decode: func(b []byte) (any, map[string]json.RawMessage, error) {
				var r upstream.Recommendation
				err := json.Unmarshal(b, &r)
				return r, r.Extra, err
			},
		},
		{
			name: "anomaly with extras",
			in:   anomalyJSON[:len(anomalyJSON)-1] + `,"root_cause":{"service":"EC2"},"tags":["x"]}`,
			decode: func(b []byte) (any, map[string]json.RawMessage, error) {
				var a upstream.Anomaly
				err := json.Unmarshal(b, &a)
				return a, a.Extra, err
			},
			wantExtra: map[string]json.RawMessage{"root_cause": json.RawMessage(`{"service":"EC2"}`), "tags": json.RawMessage(`["x"]`)},
		},
		{
			name: "anomaly without extras",
			in:   anomalyJSON,
			decode: func(b []byte) (any, map[string]json.RawMessage, error) {
				var a upstream.Anomaly
				err := json.Unmarshal(b, &a)
				return a, a.Extra, err
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, extra, err := tc.decode([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantExtra, extra); diff != "" {
				t.Errorf("Extra (-want +got):\n%s", diff)
			}
			out, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			// Re-encoding gives back every member: the known ones (all of
			// them, zero or not) and the extras.
			var in, got map[string]any
			_ = json.Unmarshal([]byte(tc.in), &in)
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("re-encoded %s: %v", out, err)
			}
			for k, v := range in {
				if diff := cmp.Diff(v, got[k]); diff != "" {
					t.Errorf("member %q after re-encoding (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

// Member names are exact, as the contract says: a member whose name
// differs from a listed one only in case is another member, kept in Extra,
// and never overwrites the listed one or stands in for it. Before, the
// decoder matched names as encoding/json does, without regard to case, so
// "Region" beside "region" replaced the region and vanished.
func TestOpenObjectsMatchNamesExactly(t *testing.T) {
	t.Parallel()
	rec := recommendationJSON[:len(recommendationJSON)-1]
	anom := anomalyJSON[:len(anomalyJSON)-1]
	tests := []struct {
		name      string
		in        string
		anomaly   bool
		wantField string // the listed member's value after decoding
		wantExtra map[string]json.RawMessage
		wantErr   string
	}{
		{name: "after the listed member", in: rec + `,"Region":"US East (N. Virginia)"}`, wantField: "us-east-1",
			wantExtra: map[string]json.RawMessage{"Region": json.RawMessage(`"US East (N. Virginia)"`)}},
		{name: "before the listed member", in: `{"Region":"US East (N. Virginia)",` + rec[1:] + `}`, wantField: "us-east-1",
			wantExtra: map[string]json.RawMessage{"Region": json.RawMessage(`"US East (N. Virginia)"`)}},
		{name: "instead of the listed member", in: strings.Replace(recommendationJSON, `"region"`, `"REGION"`, 1),
			wantErr: "region is missing"},
		{name: "anomaly", in: anom + `,"Service":"EC2","ANOMALY_ID":"other"}`, anomaly: true,
			wantField: "Amazon Elastic Compute Cloud - Compute",
			wantExtra: map[string]json.RawMessage{"Service": json.RawMessage(`"EC2"`), "ANOMALY_ID": json.RawMessage(`"other"`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var err error
			var field string
			var extra map[string]json.RawMessage
			if tc.anomaly {
				var a upstream.Anomaly
				err = json.Unmarshal([]byte(tc.in), &a)
				field, extra = a.Service, a.Extra
			} else {
				var r upstream.Recommendation
				err = json.Unmarshal([]byte(tc.in), &r)
				field, extra = r.Region, r.Extra
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if field != tc.wantField {
				t.Errorf("listed member = %q, want %q", field, tc.wantField)
			}
			if diff := cmp.Diff(tc.wantExtra, extra); diff != "" {
				t.Errorf("Extra (-want +got):\n%s", diff)
			}
		})
	}
}

// The envelope's names are exact too: an answer whose data comes as "Data"
// has no data member.
func TestEnvelopeMatchesNamesExactly(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"Data":{"success":true}}`, `{"DATA":{"success":true}}`} {
		t.Run(body, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, answer(http.StatusOK, body))
			c := newTestClient(t, f.URL)
			_, err := c.Budgets.Delete(keyCtx(t), "bud_1")
			if !errors.Is(err, upstream.ErrBadResponse) {
				t.Fatalf("err = %v, want ErrBadResponse", err)
			}
		})
	}
	// And a closed record ignores a member that differs from a listed one
	// in case: the listed one is what it reads.
	f := newFake(t, answer(http.StatusOK, `{"data":{"budget":`+budgetJSON[:len(budgetJSON)-1]+`,"NAME":"other"}}}`))
	c := newTestClient(t, f.URL)
	b, err := c.Budgets.Create(keyCtx(t), &upstream.BudgetCreate{Name: "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "Q1 Cloud Budget" {
		t.Errorf("name = %q, want the member \"name\"'s", b.Name)
	}
}

func TestOpenObjectKnownMembersWin(t *testing.T) {
	t.Parallel()
	r := upstream.Recommendation{RecommendationID: "known", Extra: map[string]json.RawMessage{
		"recommendation_id": json.RawMessage(`"extra"`),
		"other":             json.RawMessage(`1`),
	}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["recommendation_id"] != "known" || got["other"] != 1.0 {
		t.Errorf("encoded %s; want recommendation_id known and other 1", b)
	}
}

func TestOpenObjectsRejectBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
	}{
		{"null", `null`},
		{"array", `[]`},
		{"known member of the wrong type", `{"recommendation_id":7}`},
		{"bad date in anomaly", `{"anomaly_id":"a","start_date":"2026-13-01"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r upstream.Recommendation
			var a upstream.Anomaly
			errR := json.Unmarshal([]byte(tc.in), &r)
			errA := json.Unmarshal([]byte(tc.in), &a)
			if errR == nil && errA == nil {
				t.Errorf("both decoded %s without error", tc.in)
			}
		})
	}
}

func TestHistoryRow(t *testing.T) {
	t.Parallel()
	var row upstream.HistoryRow
	if err := json.Unmarshal([]byte(`{"product_product_name":"Amazon EC2","usage_date":20260531,"cost":12.5,`+
		`"neg":-0.25,"exp":1e3,"text_number":"12","null":null,"bool":true,"bad_day":20260230,"month_zero":20260001,`+
		`"short":2026053,"float_day":20260531.5,"string_day":"20260531","huge":1e400,"obj":{"a":1},`+
		`"day_point_zero":20260531.0,"day_exp":2.0260531e7,"day_big_exp":20260531E0}`), &row); err != nil {
		t.Fatal(err)
	}
	type strRes struct {
		S  string
		OK bool
	}
	strTests := []struct {
		col  string
		want strRes
	}{
		{"product_product_name", strRes{"Amazon EC2", true}},
		{"string_day", strRes{"20260531", true}},
		{"usage_date", strRes{"", false}},
		{"null", strRes{"", false}},
		{"bool", strRes{"", false}},
		{"obj", strRes{"", false}},
		{"missing", strRes{"", false}},
	}
	for _, tc := range strTests {
		t.Run("String/"+tc.col, func(t *testing.T) {
			t.Parallel()
			s, ok := row.String(tc.col)
			if diff := cmp.Diff(tc.want, strRes{s, ok}); diff != "" {
				t.Errorf("String(%q) (-want +got):\n%s", tc.col, diff)
			}
		})
	}
	// A group-by value: text, a number as its JSON text, or null.
	type groupRes struct {
		G  *string
		OK bool
	}
	text := func(s string) *string { return &s }
	groupTests := []struct {
		col  string
		want groupRes
	}{
		{"product_product_name", groupRes{text("Amazon EC2"), true}},
		{"text_number", groupRes{text("12"), true}},
		{"usage_date", groupRes{text("20260531"), true}},
		{"neg", groupRes{text("-0.25"), true}},
		{"exp", groupRes{text("1e3"), true}},
		{"null", groupRes{nil, true}},
		{"bool", groupRes{nil, false}},
		{"obj", groupRes{nil, false}},
		{"missing", groupRes{nil, false}},
	}
	for _, tc := range groupTests {
		t.Run("Group/"+tc.col, func(t *testing.T) {
			t.Parallel()
			g, ok := row.Group(tc.col)
			if diff := cmp.Diff(tc.want, groupRes{g, ok}); diff != "" {
				t.Errorf("Group(%q) (-want +got):\n%s", tc.col, diff)
			}
		})
	}
	type numRes struct {
		N  float64
		OK bool
	}
	numTests := []struct {
		col  string
		want numRes
	}{
		{"cost", numRes{12.5, true}},
		{"usage_date", numRes{20260531, true}},
		{"neg", numRes{-0.25, true}},
		{"exp", numRes{1000, true}},
		{"text_number", numRes{0, false}},
		{"null", numRes{0, false}},
		{"bool", numRes{0, false}},
		{"huge", numRes{0, false}},
		{"obj", numRes{0, false}},
		{"missing", numRes{0, false}},
	}
	for _, tc := range numTests {
		t.Run("Number/"+tc.col, func(t *testing.T) {
			t.Parallel()
			n, ok := row.Number(tc.col)
			if diff := cmp.Diff(tc.want, numRes{n, ok}); diff != "" {
				t.Errorf("Number(%q) (-want +got):\n%s", tc.col, diff)
			}
		})
	}
	dateTests := []struct {
		col     string
		want    upstream.Date
		wantErr bool
	}{
		{col: "usage_date", want: ymd(2026, 5, 31)},
		// A number is read by its value, however it is written, as every
		// integer of an answer is; before, only plain digits were a date.
		{col: "day_point_zero", want: ymd(2026, 5, 31)},
		{col: "day_exp", want: ymd(2026, 5, 31)},
		{col: "day_big_exp", want: ymd(2026, 5, 31)},
		{col: "bad_day", wantErr: true},
		{col: "month_zero", wantErr: true},
		{col: "short", wantErr: true},
		{col: "float_day", wantErr: true},
		{col: "string_day", wantErr: true},
		{col: "product_product_name", wantErr: true},
		{col: "null", wantErr: true},
		{col: "neg", wantErr: true},
		{col: "missing", wantErr: true},
	}
	for _, tc := range dateTests {
		t.Run("Date/"+tc.col, func(t *testing.T) {
			t.Parallel()
			d, err := row.Date(tc.col)
			if tc.wantErr {
				if err == nil {
					t.Errorf("Date(%q) = %v, want an error", tc.col, d)
				}
				return
			}
			if err != nil || d != tc.want {
				t.Errorf("Date(%q) = %v, %v; want %v", tc.col, d, err, tc.want)
			}
		})
	}
}

func TestBudgetDetailShapes(t *testing.T) {
	t.Parallel()
	metrics := upstream.BudgetMetrics{TotalTarget: 100, TotalActual: 40, Variance: 60}
	dims := []json.RawMessage{json.RawMessage(`{"name":"billing_account_name","values":["Production"]}`)}
	tests := []struct {
		name    string
		in      string
		want    func(t *testing.T) upstream.BudgetDetail
		wantErr bool
	}{
		{
			name: "wrapped",
			in:   `{"budget":` + budgetJSON + `,"metrics":{"totalTarget":100,"totalActual":40,"variance":60},"dimensions":[{"name":"billing_account_name","values":["Production"]}]}`,
			want: func(t *testing.T) upstream.BudgetDetail {
				return upstream.BudgetDetail{Budget: wantBudget(t), Metrics: metrics, Dimensions: dims}
			},
		},
		{
			name: "bare budget with metrics and dimensions",
			in:   budgetJSON[:len(budgetJSON)-1] + `,"metrics":{"totalTarget":100,"totalActual":40,"variance":60},"dimensions":[{"name":"billing_account_name","values":["Production"]}]}`,
			want: func(t *testing.T) upstream.BudgetDetail {
				return upstream.BudgetDetail{Budget: wantBudget(t), Metrics: metrics, Dimensions: dims}
			},
		},
		{
			name: "wrapped budget carrying metrics and dimensions",
			in:   `{"budget":` + budgetJSON[:len(budgetJSON)-1] + `,"metrics":{"totalTarget":100,"totalActual":40,"variance":60},"dimensions":[{"name":"billing_account_name","values":["Production"]}]}}`,
			want: func(t *testing.T) upstream.BudgetDetail {
				return upstream.BudgetDetail{Budget: wantBudget(t), Metrics: metrics, Dimensions: dims}
			},
		},
		{
			name: "both placements, agreeing",
			in: `{"budget":` + budgetJSON[:len(budgetJSON)-1] + `,"metrics":{"totalTarget":100,"totalActual":40,"variance":60},"dimensions":[{"name": "billing_account_name", "values": ["Production"]}]},` +
				`"metrics":{"variance":60,"totalTarget":100,"totalActual":40},"dimensions":[{"name":"billing_account_name","values":["Production"]}]}`,
			want: func(t *testing.T) upstream.BudgetDetail {
				return upstream.BudgetDetail{Budget: wantBudget(t), Metrics: metrics, Dimensions: dims}
			},
		},
		{name: "both placements, metrics disagreeing", wantErr: true,
			in: `{"budget":` + budgetJSON[:len(budgetJSON)-1] + `,"metrics":{"totalTarget":100,"totalActual":40,"variance":60}},` +
				`"metrics":{"totalTarget":100,"totalActual":41,"variance":59},"dimensions":[]}`},
		{name: "both placements, dimensions disagreeing", wantErr: true,
			in: `{"budget":` + budgetJSON[:len(budgetJSON)-1] + `,"dimensions":[{"name":"a"}]},` +
				`"metrics":{"totalTarget":100,"totalActual":40,"variance":60},"dimensions":[{"name":"b"}]}`},
		{name: "bare budget alone", in: budgetJSON, wantErr: true},
		{name: "no dimensions anywhere", wantErr: true,
			in: `{"budget":` + budgetJSON + `,"metrics":{"totalTarget":100,"totalActual":40,"variance":60}}`},
		{name: "metrics without variance", wantErr: true,
			in: `{"budget":` + budgetJSON + `,"metrics":{"totalTarget":100,"totalActual":40},"dimensions":[]}`},
		{name: "wrapped budget without a name", wantErr: true,
			in: `{"budget":` + strings.Replace(budgetJSON, `"name":"Q1 Cloud Budget",`, "", 1) + `,"metrics":{"totalTarget":100,"totalActual":40,"variance":60},"dimensions":[]}`},
		{name: "no budget at all", in: `{"metrics":{"totalTarget":100,"totalActual":40,"variance":60},"dimensions":[]}`, wantErr: true},
		{name: "null", in: `null`, wantErr: true},
		{name: "budget of the wrong type", in: `{"budget":"bud_1"}`, wantErr: true},
		{name: "array", in: `[]`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got upstream.BudgetDetail
			err := json.Unmarshal([]byte(tc.in), &got)
			if tc.wantErr {
				if err == nil {
					t.Errorf("decoded %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want(t), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Create and update answers are read in both shapes too, through the client.
func TestBudgetWriteAnswerShapes(t *testing.T) {
	t.Parallel()
	for _, shape := range []struct{ name, data string }{
		{"wrapped", `{"budget":` + budgetJSON + `}`},
		{"bare", budgetJSON},
	} {
		for _, wc := range []string{"Create", "Update"} {
			t.Run(wc+"/"+shape.name, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, answer(http.StatusOK, `{"data":`+shape.data+`}`))
				c := newTestClient(t, f.URL)
				var got *upstream.Budget
				var err error
				if wc == "Create" {
					got, err = c.Budgets.Create(keyCtx(t), &upstream.BudgetCreate{Name: "x"}, nil)
				} else {
					got, err = c.Budgets.Update(keyCtx(t), "bud_1", &upstream.BudgetUpdate{}, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(pointerTo(wantBudget(t)), got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestBudgetUpdateEncoding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   upstream.BudgetUpdate
		want string
	}{
		{"empty", upstream.BudgetUpdate{}, `{}`},
		{"lookback left out", upstream.BudgetUpdate{Name: pointerTo("n")}, `{"name":"n"}`},
		{"lookback null", upstream.BudgetUpdate{LookbackPeriod: upstream.Null[int]()}, `{"lookbackPeriod":null}`},
		{"lookback value", upstream.BudgetUpdate{LookbackPeriod: upstream.Set(6)}, `{"lookbackPeriod":6}`},
		{"lookback zero value", upstream.BudgetUpdate{LookbackPeriod: upstream.Set(0)}, `{"lookbackPeriod":0}`},
		{"raw field cleared", upstream.BudgetUpdate{GrowthRate: json.RawMessage(`null`)}, `{"growthRate":null}`},
		{"zero values that are set", upstream.BudgetUpdate{
			Name: pointerTo(""), NumberOfPeriods: pointerTo(0), NormalizationPeriod: pointerTo(false),
			StartDate: pointerTo(ymd(2026, 3, 1)),
		}, `{"name":"","numberOfPeriods":0,"startDate":"2026-03-01","normalizationPeriod":false}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("encoded %s, want %s", got, tc.want)
			}
		})
	}
}

func TestNullable(t *testing.T) {
	t.Parallel()
	type state struct {
		Value       int
		HasValue    bool
		IsNull      bool
		IsZero      bool
		MarshalJSON string
	}
	observe := func(n upstream.Nullable[int]) state {
		v, ok := n.Get()
		b, _ := json.Marshal(n)
		return state{v, ok, n.IsNull(), n.IsZero(), string(b)}
	}
	tests := []struct {
		name string
		n    upstream.Nullable[int]
		want state
	}{
		{"left out", upstream.Nullable[int]{}, state{IsZero: true, MarshalJSON: "null"}},
		{"null", upstream.Null[int](), state{IsNull: true, MarshalJSON: "null"}},
		{"zero", upstream.Set(0), state{HasValue: true, MarshalJSON: "0"}},
		{"value", upstream.Set(7), state{Value: 7, HasValue: true, MarshalJSON: "7"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, observe(tc.n)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	decode := []struct {
		in      string
		want    state
		wantErr bool
	}{
		{in: `null`, want: state{IsNull: true, MarshalJSON: "null"}},
		{in: ` 5 `, want: state{Value: 5, HasValue: true, MarshalJSON: "5"}},
		{in: `"5"`, wantErr: true},
	}
	for _, tc := range decode {
		t.Run("decode "+tc.in, func(t *testing.T) {
			t.Parallel()
			var n upstream.Nullable[int]
			err := n.UnmarshalJSON([]byte(tc.in))
			if tc.wantErr {
				if err == nil {
					t.Errorf("decoded %s without error", tc.in)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, observe(n)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestExplorerQueryEncoding(t *testing.T) {
	t.Parallel()
	withFilters := testQuery()
	withFilters.Filters = []json.RawMessage{json.RawMessage(`{"dimension":"billing_account_name","operator":"in","values":["Production"]}`)}
	empty := testQuery()
	empty.Filters = []json.RawMessage{}
	tests := []struct {
		name string
		q    any
		want string
	}{
		{"nil filters as value", *testQuery(), explorerQueryJSON},
		{"nil filters as pointer", testQuery(), explorerQueryJSON},
		{"empty filters", empty, explorerQueryJSON},
		{"filters kept", withFilters, `{"dateRange":{"start":"2026-05-31","end":"2026-06-29"},"groupBy":"product_product_name",` +
			`"costType":"line_item_unblended_cost","granularity":"day",` +
			`"filters":[{"dimension":"billing_account_name","operator":"in","values":["Production"]}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("encoded\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestParseDate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    upstream.Date
		wantErr bool
	}{
		{in: "2026-01-01", want: ymd(2026, 1, 1)},
		{in: "2024-02-29", want: ymd(2024, 2, 29)},
		{in: "2026-12-31", want: ymd(2026, 12, 31)},
		{in: "2026-1-1", wantErr: true},
		{in: "2026-02-30", wantErr: true},
		{in: "2025-02-29", wantErr: true},
		{in: "2026-13-01", wantErr: true},
		{in: "2026-00-10", wantErr: true},
		{in: "20260101", wantErr: true},
		{in: " 2026-01-01", wantErr: true},
		{in: "2026-01-01 ", wantErr: true},
		{in: "2026-01-1 ", wantErr: true},
		{in: "2026/01/01", wantErr: true},
		{in: "2026-01-01T00:00:00Z", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := upstream.ParseDate(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Errorf("ParseDate(%q) = %v, want an error", tc.in, got)
				}
				var d upstream.Date
				if err := json.Unmarshal([]byte(`"`+tc.in+`"`), &d); err == nil {
					t.Errorf("json decoded %q as %v, want an error", tc.in, d)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseDate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
			b, err := json.Marshal(got)
			if err != nil || string(b) != `"`+tc.in+`"` {
				t.Errorf("json = %s, %v; want %q", b, err, tc.in)
			}
			if want := time.Date(tc.want.Year, tc.want.Month, tc.want.Day, 0, 0, 0, 0, time.UTC); !got.Time().Equal(want) {
				t.Errorf("Time() = %v, want %v", got.Time(), want)
			}
		})
	}
}

func TestDateOfAndZero(t *testing.T) {
	t.Parallel()
	// Late evening in New York is already the next day in UTC: DateOf uses t's location.
	ny := time.FixedZone("EST", -5*3600)
	if got := upstream.DateOf(time.Date(2026, 1, 31, 23, 0, 0, 0, ny)); got != ymd(2026, 1, 31) {
		t.Errorf("DateOf = %v, want 2026-01-31", got)
	}
	if !(upstream.Date{}).IsZero() || ymd(2026, 1, 1).IsZero() {
		t.Error("IsZero is wrong")
	}
}

func TestTimestamp(t *testing.T) {
	t.Parallel()
	encode := []struct {
		name string
		in   time.Time
		want string
	}{
		{"UTC with millis", time.Date(2026, 7, 20, 18, 0, 0, 123_000_000, time.UTC), "2026-07-20T18:00:00.123Z"},
		{"whole second keeps .000", time.Date(2026, 7, 20, 18, 0, 0, 0, time.UTC), "2026-07-20T18:00:00.000Z"},
		{"other zone becomes UTC", time.Date(2026, 7, 20, 20, 0, 0, 0, time.FixedZone("CEST", 2*3600)), "2026-07-20T18:00:00.000Z"},
		{"sub-millisecond dropped", time.Date(2026, 7, 20, 18, 0, 0, 123_999_999, time.UTC), "2026-07-20T18:00:00.123Z"},
	}
	for _, tc := range encode {
		t.Run("encode/"+tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(upstream.Timestamp{Time: tc.in})
			if err != nil || string(b) != `"`+tc.want+`"` {
				t.Errorf("json = %s, %v; want %q", b, err, tc.want)
			}
			if s := (upstream.Timestamp{Time: tc.in}).String(); s != tc.want {
				t.Errorf("String() = %q, want %q", s, tc.want)
			}
			if _, err := time.Parse(upstream.TimestampLayout, tc.want); err != nil {
				t.Errorf("%q does not fit TimestampLayout: %v", tc.want, err)
			}
		})
	}
	decode := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{in: "2026-07-20T18:00:00.000Z", want: time.Date(2026, 7, 20, 18, 0, 0, 0, time.UTC)},
		{in: "2026-07-20T18:00:00Z", want: time.Date(2026, 7, 20, 18, 0, 0, 0, time.UTC)},
		{in: "2026-07-20T20:00:00.5+02:00", want: time.Date(2026, 7, 20, 18, 0, 0, 500_000_000, time.UTC)},
		// A leap second reads as the next second, the first of the next
		// day; second 60 anywhere but the last minute of a UTC day is
		// none, and refused.
		{in: "2016-12-31T23:59:60.000Z", want: time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC)},
		{in: "2016-12-31T23:59:60.500Z", want: time.Date(2017, 1, 1, 0, 0, 0, 500_000_000, time.UTC)},
		{in: "2016-12-31T23:59:60Z", want: time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC)},
		{in: "2016-12-31T18:59:60-05:00", want: time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC)},
		{in: "2016-12-31T23:59:60+01:00", wantErr: true},
		{in: "2026-07-20T18:00:60.000Z", wantErr: true},
		{in: "2016-12-31T23:59:61.000Z", wantErr: true},
		{in: "2026-07-20 18:00:00", wantErr: true},
		{in: "2026-07-20", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range decode {
		t.Run("decode/"+tc.in, func(t *testing.T) {
			t.Parallel()
			var got upstream.Timestamp
			err := json.Unmarshal([]byte(`"`+tc.in+`"`), &got)
			if tc.wantErr {
				if err == nil {
					t.Errorf("decoded %q as %v, want an error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tc.want) || got.Location() != time.UTC {
				t.Errorf("decoded %v, want %v in UTC", got.Time, tc.want)
			}
		})
	}
}

// Date.Append writes what the %04d-%02d-%02d it replaced wrote, for every
// date and for values no parse makes.
func TestDateAppend(t *testing.T) {
	t.Parallel()
	check := func(d upstream.Date) {
		t.Helper()
		want := fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
		if got := string(d.Append([]byte("x"))); got != "x"+want {
			t.Errorf("%#v.Append = %q, want %q", d, got, "x"+want)
		}
		if got := d.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", d, got, want)
		}
	}
	for day := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC); day.Year() < 10000; day = day.AddDate(0, 0, 97) {
		check(upstream.DateOf(day))
	}
	for _, d := range []upstream.Date{{}, {Year: 9999, Month: 12, Day: 31}, {Year: 10000, Month: 1, Day: 1},
		{Year: -1, Month: 1, Day: 1}, {Year: 2026, Month: 13, Day: 1}, {Year: 2026, Month: 1, Day: 100}} {
		check(d)
	}
}
