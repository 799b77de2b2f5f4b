package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// getBudget's answer is read in each placement of metrics and dimensions
// the contract's words allow; before, an upstream that put them inside
// data.budget got zeros and nulls.
func TestGetBudgetPlacements(t *testing.T) {
	t.Parallel()
	const (
		metrics = `"metrics":{"totalTarget":192000,"totalActual":150000.5,"variance":41999.5}`
		dims    = `"dimensions":[{"name":"billing_account_name","values":["Production","Staging"]}]`
	)
	inner := budgetJSON[:len(budgetJSON)-1] + "," + metrics + "," + dims + "}"
	tests := []struct {
		name string
		data string
		want bool // false: refused as malformed
	}{
		{"beside the budget", `{"budget":` + budgetJSON + `,` + metrics + `,` + dims + `}`, true},
		{"inside the budget", `{"budget":` + inner + `}`, true},
		{"a bare budget", inner, true},
		{"both, agreeing", `{"budget":` + inner + `,` + metrics + `,` + dims + `}`, true},
		{"both, disagreeing", `{"budget":` + inner + `,"metrics":{"totalTarget":1,"totalActual":1,"variance":0},` + dims + `}`, false},
		{"neither", `{"budget":` + budgetJSON + `}`, false},
	}
	want := &upstream.BudgetDetail{
		Budget:     wantBudget(t),
		Metrics:    upstream.BudgetMetrics{TotalTarget: 192000, TotalActual: 150000.5, Variance: 41999.5},
		Dimensions: []json.RawMessage{json.RawMessage(`{"name":"billing_account_name","values":["Production","Staging"]}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, answer(http.StatusOK, `{"data":`+tc.data+`}`))
			c := newTestClient(t, f.URL)
			got, err := c.Budgets.Get(keyCtx(t), "bud_1")
			if !tc.want {
				var ue *upstream.Error
				if !errors.Is(err, upstream.ErrBadResponse) || !errors.As(err, &ue) || ue.Op != "getBudget" {
					t.Fatalf("err = %v, want an ErrBadResponse of getBudget", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// decodeCase is one answer of an operation with a record in it, and the
// members of that record the decoder requires.
type decodeCase struct {
	name     string
	call     func(ctx context.Context, c *upstream.Client) error
	op       string
	answer   string // the answer, with %s where the record goes
	record   string // the record, a JSON object
	at       string // where the record is in the answer, as errors name it
	required []string
	optional []string
}

func decodeCases() []decodeCase {
	page := func(pg string) string {
		return `{"data":[` + pg + `],"pagination":{"limit":50,"has_more":false,"next_cursor":null}}`
	}
	list := func(f func(ctx context.Context, c *upstream.Client) (int, error)) func(ctx context.Context, c *upstream.Client) error {
		return func(ctx context.Context, c *upstream.Client) error { return errOf(f(ctx, c)) }
	}
	budgetRequired := []string{"id", "name", "targetType", "period", "status", "numberOfPeriods", "startDate", "endDate",
		"normalizationPeriod", "organizationId", "serviceClientId", "creatorId", "explorerReportId", "createdAt", "updatedAt"}
	budgetOptional := []string{"lookbackPeriod", "budgetType", "startingValue", "customStartingValue", "growthRate",
		"explorerReport", "creator", "plannings"}
	planningRequired := []string{"id", "budgetId", "dimension1", "dimension2", "previousMonth", "avgLookback",
		"percentGrowth", "targetItems", "targetType", "createdAt"}
	detail := `,"metrics":{"totalTarget":1,"totalActual":1,"variance":0},"dimensions":[]`
	var cases []decodeCase
	for _, l := range listers() {
		dc := decodeCase{name: l.name + ".List", op: "list" + l.name, call: list(func(ctx context.Context, c *upstream.Client) (int, error) {
			return l.list(ctx, c, nil)
		}), answer: page(l.item(0) + ",%s"), record: l.item(1), at: "data[1]"}
		switch l.name {
		case "Recommendations":
			dc.required = []string{"recommendation_id", "recommendation_name", "estimated_monthly_savings", "implementation_effort",
				"category", "action_type", "account_name", "region", "resource_id"}
			dc.optional = []string{"extra_1"}
		case "Anomalies":
			dc.required = []string{"anomaly_id", "service", "start_date", "end_date", "score_current", "score_max", "impact_max",
				"impact_total", "impact_pct", "impact_actual_spend", "impact_expected_spend", "dimension_value", "detection_source"}
		case "Budgets":
			dc.required, dc.optional = budgetRequired, budgetOptional
		case "Notifications":
			dc.op = "listScheduledNotifications"
			dc.required = []string{"id", "recipientEmail", "subject", "scheduleType", "scheduledAt", "recurrenceFrequency",
				"recurrenceTimezone", "recurrenceWeekday", "cronExpression", "status", "createdAt", "updatedAt", "includeAssistantAnalysis"}
			dc.optional = []string{"recurrenceDayOfMonth", "sentAt", "errorMessage", "nextAttemptAt", "canvasId", "explorerReportId"}
		}
		cases = append(cases, dc)
	}
	get := func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.Get(ctx, "bud_1")) }
	create := func(ctx context.Context, c *upstream.Client) error {
		return errOf(c.Budgets.Create(ctx, &upstream.BudgetCreate{Name: "x"}, nil))
	}
	update := func(ctx context.Context, c *upstream.Client) error {
		return errOf(c.Budgets.Update(ctx, "bud_1", &upstream.BudgetUpdate{}, nil))
	}
	explorer := func(f func(ctx context.Context, c *upstream.Client) (any, error)) func(ctx context.Context, c *upstream.Client) error {
		return func(ctx context.Context, c *upstream.Client) error { return errOf(f(ctx, c)) }
	}
	return append(cases,
		decodeCase{name: "Budgets.Get", op: "getBudget", call: get, answer: `{"data":{"budget":%s` + detail + `}}`,
			record: budgetJSON, at: "data.budget", required: budgetRequired, optional: budgetOptional},
		decodeCase{name: "Budgets.Get metrics", op: "getBudget", call: get,
			answer: `{"data":{"budget":` + budgetJSON + `,"metrics":%s,"dimensions":[]}}`,
			record: `{"totalTarget":1,"totalActual":1,"variance":0}`, at: "data.metrics", required: []string{"totalTarget", "totalActual", "variance"}},
		decodeCase{name: "Budgets.Get planning row", op: "getBudget", call: get,
			answer: `{"data":{"budget":` + strings.Replace(budgetJSON, planningJSON, "%s", 1) + detail + `}}`,
			record: planningJSON, at: "data.budget.plannings[0]", required: planningRequired, optional: []string{"percentSpend"}},
		decodeCase{name: "Budgets.Get report", op: "getBudget", call: get,
			answer: `{"data":{"budget":` + strings.Replace(budgetJSON, `{"id":"rpt_1","name":"AWS Spend by Account"}`, "%s", 1) + detail + `}}`,
			record: `{"id":"rpt_1","name":"AWS Spend by Account"}`, at: "data.budget.explorerReport", required: []string{"id", "name"}},
		decodeCase{name: "Budgets.Create", op: "createBudget", call: create, answer: `{"data":{"budget":%s}}`,
			record: budgetJSON, at: "data.budget", required: budgetRequired, optional: budgetOptional},
		decodeCase{name: "Budgets.Create bare", op: "createBudget", call: create, answer: `{"data":%s}`,
			record: budgetJSON, at: "data", required: budgetRequired, optional: budgetOptional},
		decodeCase{name: "Budgets.Update", op: "updateBudget", call: update, answer: `{"data":{"budget":%s}}`,
			record: budgetJSON, at: "data.budget", required: budgetRequired, optional: budgetOptional},
		decodeCase{name: "Budgets.Delete", op: "deleteBudget", answer: `{"data":%s}`, record: `{"success":true}`, at: "data",
			required: []string{"success"}, call: func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.Delete(ctx, "bud_1")) }},
		decodeCase{name: "Budgets.Actuals", op: "getBudgetActuals", answer: `{"data":%s}`,
			record: `{"actualsByPlanning":{"p":{"2026-01":1}},"accountActualsByPeriod":{"2026-01":1}}`, at: "data",
			required: []string{"actualsByPlanning", "accountActualsByPeriod"}, call: func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.Actuals(ctx, "bud_1")) }},
		decodeCase{name: "Budgets.Planning", op: "getBudgetPlanning", answer: `{"data":{"plannings":[%s]}}`,
			record: planningJSON, at: "data.plannings[0]", required: planningRequired, optional: []string{"percentSpend"},
			call: func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.Planning(ctx, "bud_1")) }},
		decodeCase{name: "Budgets.LookbackPreview", op: "budgetLookbackGet", answer: `{"data":{"periods":[%s]}}`,
			record: `{"periodKey":"2026-01","actual":1,"projected":2}`, at: "data.periods[0]",
			required: []string{"periodKey", "actual"}, optional: []string{"projected"},
			call: func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.LookbackPreview(ctx)) }},
		decodeCase{name: "Explorer.Summary", op: "explorerSummary", answer: `{"data":{"cards":[%s],"servedFromCache":true}}`,
			record: `{"title":"t","description":"d","value":1,"previousValue":2}`, at: "data.cards[0]",
			required: []string{"title", "description", "value", "previousValue"},
			call: explorer(func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Explorer.Summary(ctx, testQuery())
			})},
		decodeCase{name: "Explorer.PreviousPeriod", op: "explorerPreviousPeriod", answer: `{"data":%s}`,
			record: `{"currentTotal":1,"previousTotal":2,"changePercent":3,"servedFromCache":false}`, at: "data",
			required: []string{"currentTotal", "previousTotal", "changePercent", "servedFromCache"},
			call: explorer(func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Explorer.PreviousPeriod(ctx, testQuery())
			})},
		decodeCase{name: "Explorer.History", op: "explorerHistory", answer: `{"data":%s}`,
			record: `{"costRows":[{"g":"x","usage_date":20260531,"cost":1}],"totalsByTimeRows":[],"usageRows":[],"usageGroupRows":[],` +
				`"timeColumn":"usage_date","groupBy":"g","servedFromCache":false}`, at: "data",
			required: []string{"costRows", "totalsByTimeRows", "usageRows", "usageGroupRows", "timeColumn", "groupBy", "servedFromCache"},
			call: explorer(func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Explorer.History(ctx, testQuery())
			})},
		decodeCase{name: "Explorer.Heatmap", op: "explorerHeatmap", answer: `{"data":{"rows":[%s],"servedFromCache":true}}`,
			record: `{"dimension":"EC2","day":"2026-05-31","cost":3.25}`, at: "data.rows[0]", required: []string{"dimension", "day", "cost"},
			call: explorer(func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Explorer.Heatmap(ctx, testQuery())
			})},
		decodeCase{name: "Explorer.DimensionValues", op: "explorerDimensionValues", answer: `{"data":%s}`,
			record: `{"items":[{"value":"EC2","cost":1}],"values":["EC2"],"hasMore":false,"servedFromCache":true}`, at: "data",
			required: []string{"items", "values", "hasMore", "servedFromCache"},
			call: explorer(func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Explorer.DimensionValues(ctx, "product_product_name")
			})},
		decodeCase{name: "Budgets.List pagination", op: "listBudgets", answer: `{"data":[],"pagination":%s}`,
			record: `{"limit":50,"has_more":false,"next_cursor":null,"total":3}`, at: "pagination",
			required: []string{"has_more"}, optional: []string{"limit", "next_cursor", "total"},
			call: list(func(ctx context.Context, c *upstream.Client) (int, error) { return listers()[2].list(ctx, c, nil) })},
	)
}

// No silent zero values: an answer without a member the contract lists and
// the schema shows as non-null (or with null in its place) is refused with
// an error naming the operation and the member, never read as a zero.
// Optional members may go. Before, a budget without a name came out as "",
// a missing date as 0000-00-00, and a create answered {"data":{}} was a
// success.
func TestRequiredMembers(t *testing.T) {
	t.Parallel()
	for _, dc := range decodeCases() {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal([]byte(dc.record), &rec); err != nil {
			t.Fatalf("%s: bad record: %v", dc.name, err)
		}
		for name := range rec {
			if !slices.Contains(dc.required, name) && !slices.Contains(dc.optional, name) {
				t.Errorf("%s: member %s is neither required nor optional in the test", dc.name, name)
			}
		}
		with := func(change func(map[string]json.RawMessage)) string {
			m := map[string]json.RawMessage{}
			for k, v := range rec {
				m[k] = v
			}
			change(m)
			b, _ := json.Marshal(m)
			return strings.Replace(dc.answer, "%s", string(b), 1)
		}
		run := func(t *testing.T, body string) error {
			f := newFake(t, answer(http.StatusOK, body))
			c := newTestClient(t, f.URL, upstream.WithRetry(noRetry))
			return dc.call(keyCtx(t), c)
		}
		t.Run(dc.name+"/complete", func(t *testing.T) {
			t.Parallel()
			if err := run(t, with(func(map[string]json.RawMessage) {})); err != nil {
				t.Fatalf("the complete answer: %v", err)
			}
		})
		for _, m := range dc.required {
			for _, how := range []string{"missing", "null"} {
				t.Run(dc.name+"/"+m+" "+how, func(t *testing.T) {
					t.Parallel()
					err := run(t, with(func(r map[string]json.RawMessage) {
						if how == "null" {
							r[m] = json.RawMessage("null")
						} else {
							delete(r, m)
						}
					}))
					if diff := cmp.Diff([]string{"ErrBadResponse"}, matching(err)); diff != "" {
						t.Fatalf("err = %v; sentinels (-want +got):\n%s", err, diff)
					}
					var ue *upstream.Error
					if !errors.As(err, &ue) || ue.Op != dc.op {
						t.Fatalf("err = %v, want an *Error of %s", err, dc.op)
					}
					want := dc.op + ": 200 malformed_response: " + dc.at + "." + m + " is " + how
					if !strings.Contains(err.Error(), want) {
						t.Errorf("err = %q, want it to say %q", err, want)
					}
				})
			}
		}
		for _, m := range dc.optional {
			t.Run(dc.name+"/"+m+" left out", func(t *testing.T) {
				t.Parallel()
				if err := run(t, with(func(r map[string]json.RawMessage) { delete(r, m) })); err != nil {
					t.Errorf("without optional %s: %v", m, err)
				}
			})
		}
	}
}

// A write answered with no budget at all is a failure, not a success.
func TestWriteAnswerWithoutABudget(t *testing.T) {
	t.Parallel()
	for _, wc := range writeCalls() {
		for _, data := range []string{`{}`, `{"budget":null}`, `{"budget":{}}`, `{"unrelated":1}`} {
			t.Run(wc.name+"/"+data, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, answer(http.StatusOK, `{"data":`+data+`}`))
				c := newTestClient(t, f.URL)
				err := wc.call(keyCtx(t), c, nil)
				var ue *upstream.Error
				if !errors.Is(err, upstream.ErrBadResponse) || !errors.As(err, &ue) || ue.Op != wc.op {
					t.Fatalf("err = %v, want an ErrBadResponse of %s", err, wc.op)
				}
				if !strings.Contains(err.Error(), "data.budget") {
					t.Errorf("err = %q, want it to name data.budget", err)
				}
			})
		}
	}
}

// An amount is a number: null in a map of amounts (a period's actual, a
// planning row's target) is refused with the member's path, never read as
// 0. Before, {"2026-01":null} came out as an actual of 0, indistinguishable
// from a month that cost nothing.
func TestNullAmountIsRefused(t *testing.T) {
	t.Parallel()
	actuals := func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.Actuals(ctx, "bud_1")) }
	planning := func(ctx context.Context, c *upstream.Client) error { return errOf(c.Budgets.Planning(ctx, "bud_1")) }
	tests := []struct {
		name string
		call func(ctx context.Context, c *upstream.Client) error
		op   string
		data string
		want string // the error names this member
	}{
		{"account actual", actuals, "getBudgetActuals",
			`{"actualsByPlanning":{"p":{"2026-01":1}},"accountActualsByPeriod":{"2026-01":1,"2026-02":null}}`,
			"data.accountActualsByPeriod.2026-02 is null"},
		{"planning row actual", actuals, "getBudgetActuals",
			`{"actualsByPlanning":{"p":{"2026-01":null,"2026-02":2}},"accountActualsByPeriod":{"2026-01":1}}`,
			"data.actualsByPlanning.p.2026-01 is null"},
		{"planning row", actuals, "getBudgetActuals",
			`{"actualsByPlanning":{"p":null},"accountActualsByPeriod":{"2026-01":1}}`,
			"data.actualsByPlanning.p is null"},
		{"target item", planning, "getBudgetPlanning",
			`{"plannings":[` + strings.Replace(planningJSON, `"Staging":4000`, `"Staging":null`, 1) + `]}`,
			"data.plannings[0].targetItems.Staging is null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, answer(http.StatusOK, `{"data":`+tc.data+`}`))
			c := newTestClient(t, f.URL, upstream.WithRetry(noRetry))
			err := tc.call(keyCtx(t), c)
			if diff := cmp.Diff([]string{"ErrBadResponse"}, matching(err)); diff != "" {
				t.Fatalf("err = %v; sentinels (-want +got):\n%s", err, diff)
			}
			var ue *upstream.Error
			if !errors.As(err, &ue) || ue.Op != tc.op {
				t.Fatalf("err = %v, want an *Error of %s", err, tc.op)
			}
			if want := tc.op + ": 200 malformed_response: " + tc.want; !strings.Contains(err.Error(), want) {
				t.Errorf("err = %q, want it to say %q", err, want)
			}
		})
	}
}

// The contract says "integer" and no more, and JSON has one kind of
// number: a member that is an integer is read from any number whose value
// is one, however it is written (12, 12.0, 1.2e1), and refused, naming the
// member, when its value has a fraction or does not fit. Before, only the
// digits-only form was read, and 12.0 refused the whole answer.
func TestIntegerMembersTakeAnyIntegralNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		member string
		in     string
		want   int64 // when wantErr is ""
		// wantErr is what the error says after the member's path.
		wantErr string
	}{
		{"numberOfPeriods", `12`, 12, ""},
		{"numberOfPeriods", `12.0`, 12, ""},
		{"numberOfPeriods", `12.000e0`, 12, ""},
		{"numberOfPeriods", `1.2e1`, 12, ""},
		{"numberOfPeriods", `1.2E+1`, 12, ""},
		{"numberOfPeriods", `120e-1`, 12, ""},
		{"numberOfPeriods", `0.0`, 0, ""},
		{"numberOfPeriods", `-0`, 0, ""},
		{"numberOfPeriods", `-0.0e5`, 0, ""},
		{"numberOfPeriods", `0e999999999999`, 0, ""},
		{"numberOfPeriods", `12.5`, 0, "is 12.5, not an integer"},
		{"numberOfPeriods", `1.25e1`, 0, "is 1.25e1, not an integer"},
		{"numberOfPeriods", `1e-999999999999`, 0, "is 1e-999999999999, not an integer"},
		{"serviceClientId", `9223372036854775807`, 9223372036854775807, ""},
		{"serviceClientId", `9.223372036854775807e18`, 9223372036854775807, ""},
		{"serviceClientId", `-9223372036854775808`, -9223372036854775808, ""},
		{"serviceClientId", `-9223372036854775808.0`, -9223372036854775808, ""},
		{"serviceClientId", `9223372036854775808`, 0, "is 9223372036854775808, out of the range of a 64-bit integer"},
		{"serviceClientId", `9.3e18`, 0, "is 9.3e18, out of the range of a 64-bit integer"},
		{"serviceClientId", `1e999999999999`, 0, "is 1e999999999999, out of the range of a 64-bit integer"},
		{"serviceClientId", `-9223372036854775809`, 0, "is -9223372036854775809, out of the range of a 64-bit integer"},
	}
	for _, tc := range tests {
		t.Run(tc.member+"="+tc.in, func(t *testing.T) {
			t.Parallel()
			old := map[string]string{"numberOfPeriods": "12", "serviceClientId": "1001"}[tc.member]
			rec := strings.Replace(budgetJSON, `"`+tc.member+`":`+old+`,`, `"`+tc.member+`":`+tc.in+`,`, 1)
			f := newFake(t, answer(http.StatusOK, `{"data":{"budget":`+rec+`}}`))
			c := newTestClient(t, f.URL)
			b, err := c.Budgets.Create(keyCtx(t), &upstream.BudgetCreate{Name: "x"}, nil)
			if tc.wantErr != "" {
				want := "createBudget: 200 malformed_response: data.budget." + tc.member + " " + tc.wantErr
				if !errors.Is(err, upstream.ErrBadResponse) || !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want an ErrBadResponse saying %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := int64(b.NumberOfPeriods)
			if tc.member == "serviceClientId" {
				got = b.ServiceClientID
			}
			if got != tc.want {
				t.Errorf("%s = %d, want %d", tc.member, got, tc.want)
			}
		})
	}
}

// The integers the gateway's clients see as GraphQL's Int, which holds 32
// bits, are refused beyond that range, naming the member: the answer is one
// the gateway cannot pass on. Before, 2147483648 weeks went straight into
// an Int, which GraphQL forbids. serviceClientId (Int64) and
// pagination.limit (not shown to clients) keep their 64 bits.
func TestIntegerMembersShownAsGraphQLIntHold32Bits(t *testing.T) {
	t.Parallel()
	budget := func(ctx context.Context, c *upstream.Client) error {
		return errOf(c.Budgets.Create(ctx, &upstream.BudgetCreate{Name: "x"}, nil))
	}
	notifications := func(ctx context.Context, c *upstream.Client) error {
		return errOf(c.Notifications.ListScheduled(ctx, nil))
	}
	notificationPage := func(rec string) string {
		return `{"data":[` + rec + `],"pagination":{"limit":50,"has_more":false,"next_cursor":null,"total":1}}`
	}
	tests := []struct {
		member string
		call   func(ctx context.Context, c *upstream.Client) error
		op     string
		answer func(value string) string
		at     string // the member's path in the answer
	}{
		{"numberOfPeriods", budget, "createBudget", func(v string) string {
			return `{"data":{"budget":` + strings.Replace(budgetJSON, `"numberOfPeriods":12`, `"numberOfPeriods":`+v, 1) + `}}`
		}, "data.budget.numberOfPeriods"},
		{"lookbackPeriod", budget, "createBudget", func(v string) string {
			return `{"data":{"budget":` + strings.Replace(budgetJSON, `"lookbackPeriod":null`, `"lookbackPeriod":`+v, 1) + `}}`
		}, "data.budget.lookbackPeriod"},
		{"recurrenceWeekday", notifications, "listScheduledNotifications", func(v string) string {
			return notificationPage(strings.Replace(notificationJSON, `"recurrenceWeekday":1`, `"recurrenceWeekday":`+v, 1))
		}, "data[0].recurrenceWeekday"},
		{"recurrenceDayOfMonth", notifications, "listScheduledNotifications", func(v string) string {
			return notificationPage(strings.Replace(notificationJSON, `"recurrenceDayOfMonth":null`, `"recurrenceDayOfMonth":`+v, 1))
		}, "data[0].recurrenceDayOfMonth"},
		{"total", notifications, "listScheduledNotifications", func(v string) string {
			return strings.Replace(notificationPage(notificationJSON), `"total":1`, `"total":`+v, 1)
		}, "pagination.total"},
	}
	for _, tc := range tests {
		for _, v := range []string{"2147483647", "-2147483648", "2.147483647e9", "2147483648", "-2147483649", "1e10"} {
			t.Run(tc.member+"="+v, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, answer(http.StatusOK, tc.answer(v)))
				c := newTestClient(t, f.URL)
				err := tc.call(keyCtx(t), c)
				if v == "2147483647" || v == "-2147483648" || v == "2.147483647e9" {
					if err != nil {
						t.Fatalf("err = %v, want the answer read", err)
					}
					return
				}
				want := tc.op + ": 200 malformed_response: " + tc.at + " is " + v + ", out of the range of a 32-bit integer"
				if !errors.Is(err, upstream.ErrBadResponse) || !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want an ErrBadResponse saying %q", err, want)
				}
			})
		}
	}
}

// A timestamp with a leap second, valid RFC 3339, is read (as the next
// second) where the client reads a timestamp in one pass. Before, it
// refused the whole answer.
func TestLeapSecondTimestamp(t *testing.T) {
	t.Parallel()
	row := strings.Replace(planningJSON, `"createdAt":"2026-01-02T03:04:05.678Z"`, `"createdAt":"2016-12-31T23:59:60.250Z"`, 1)
	f := newFake(t, answer(http.StatusOK, `{"data":{"plannings":[`+row+`]}}`))
	c := newTestClient(t, f.URL)
	g, err := c.Budgets.Planning(keyCtx(t), "bud_1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Plannings[0].CreatedAt.Time, time.Date(2017, 1, 1, 0, 0, 0, 250_000_000, time.UTC); !got.Equal(want) {
		t.Errorf("createdAt = %v, want %v", got, want)
	}
}
