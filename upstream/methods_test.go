package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

// Wire fixtures, shaped like the contract's examples.
const (
	planningJSON = `{"id":"pln_1","budgetId":"bud_1","dimension1":"billing_account_name","dimension2":"",` +
		`"previousMonth":15200.5,"avgLookback":15000,"percentGrowth":5,"percentSpend":null,` +
		`"targetItems":{"Production":12000,"Staging":4000},"targetType":"PLANNING_ITEM","createdAt":"2026-01-02T03:04:05.678Z"}`
	budgetJSON = `{"id":"bud_1","name":"Q1 Cloud Budget","targetType":"BUDGET","period":"MONTHLY","status":"ACTIVE",` +
		`"numberOfPeriods":12,"startDate":"2026-01-01","endDate":"2026-12-01","lookbackPeriod":null,"budgetType":null,` +
		`"startingValue":null,"customStartingValue":null,"growthRate":5,"normalizationPeriod":true,"organizationId":"org-1001",` +
		`"serviceClientId":1001,"creatorId":"usr_1","explorerReportId":"rpt_1","createdAt":"2026-01-02T03:04:05.678Z",` +
		`"updatedAt":"2026-01-03T03:04:05.678Z","explorerReport":{"id":"rpt_1","name":"AWS Spend by Account"},` +
		`"creator":{"id":"usr_1","firstName":"FinOps","lastName":"Analyst","email":"finops@example.com"},` +
		`"plannings":[` + planningJSON + `]}`
	recommendationJSON = `{"recommendation_id":"rec-ec2-rightsize-001","recommendation_name":"Rightsize underutilized EC2 instances",` +
		`"estimated_monthly_savings":842.5,"implementation_effort":"Low","category":"Compute","action_type":"Rightsize",` +
		`"account_name":"Production","region":"us-east-1","resource_id":"i-0abc123def456"}`
	anomalyJSON = `{"anomaly_id":"anom-ec2-spike-001","service":"Amazon Elastic Compute Cloud - Compute","start_date":"2026-07-10",` +
		`"end_date":"2026-07-12","score_current":0.92,"score_max":0.95,"impact_max":1240.5,"impact_total":2481,"impact_pct":42.3,` +
		`"impact_actual_spend":4200,"impact_expected_spend":1718.5,"dimension_value":"us-east-1","detection_source":"aws"}`
	notificationJSON = `{"id":"clxnotif01","recipientEmail":"finops@example.com","subject":"Weekly canvas report",` +
		`"scheduleType":"recurring","scheduledAt":"2026-07-20T18:00:00.000Z","recurrenceFrequency":"weekly",` +
		`"recurrenceTimezone":"America/New_York","recurrenceWeekday":1,"recurrenceDayOfMonth":null,"cronExpression":"0 14 * * 1",` +
		`"status":"pending","sentAt":null,"errorMessage":null,"nextAttemptAt":"2026-07-20T18:05:00.000Z",` +
		`"createdAt":"2026-07-01T00:00:00.000Z","updatedAt":"2026-07-02T00:00:00.000Z","canvasId":"cnv_1",` +
		`"explorerReportId":null,"includeAssistantAnalysis":true}`
	explorerQueryJSON = `{"dateRange":{"start":"2026-05-31","end":"2026-06-29"},"groupBy":"product_product_name",` +
		`"costType":"line_item_unblended_cost","granularity":"day","filters":[]}`
)

func wantPlanning(t *testing.T) upstream.Planning {
	return upstream.Planning{
		ID: "pln_1", BudgetID: "bud_1", Dimension1: "billing_account_name", Dimension2: "",
		PreviousMonth: 15200.5, AvgLookback: 15000, PercentGrowth: 5,
		TargetItems: map[string]float64{"Production": 12000, "Staging": 4000},
		TargetType:  "PLANNING_ITEM", CreatedAt: ts(t, "2026-01-02T03:04:05.678Z"),
	}
}

func wantBudget(t *testing.T) upstream.Budget {
	null := json.RawMessage("null")
	return upstream.Budget{
		ID: "bud_1", Name: "Q1 Cloud Budget", TargetType: "BUDGET", Period: "MONTHLY", Status: "ACTIVE",
		NumberOfPeriods: 12, StartDate: ymd(2026, 1, 1), EndDate: ymd(2026, 12, 1),
		BudgetType: null, StartingValue: null, CustomStartingValue: null, GrowthRate: json.RawMessage("5"),
		NormalizationPeriod: true, OrganizationID: "org-1001", ServiceClientID: 1001, CreatorID: "usr_1",
		ExplorerReportID: "rpt_1",
		CreatedAt:        ts(t, "2026-01-02T03:04:05.678Z"), UpdatedAt: ts(t, "2026-01-03T03:04:05.678Z"),
		ExplorerReport: &upstream.ExplorerReport{ID: "rpt_1", Name: "AWS Spend by Account"},
		Creator:        &upstream.User{ID: "usr_1", FirstName: "FinOps", LastName: "Analyst", Email: "finops@example.com"},
		Plannings:      []upstream.Planning{wantPlanning(t)},
	}
}

var wantRecommendation = upstream.Recommendation{
	RecommendationID: "rec-ec2-rightsize-001", RecommendationName: "Rightsize underutilized EC2 instances",
	EstimatedMonthlySavings: 842.5, ImplementationEffort: "Low", Category: "Compute", ActionType: "Rightsize",
	AccountName: "Production", Region: "us-east-1", ResourceID: "i-0abc123def456",
}

var wantAnomaly = upstream.Anomaly{
	AnomalyID: "anom-ec2-spike-001", Service: "Amazon Elastic Compute Cloud - Compute",
	StartDate: ymd(2026, 7, 10), EndDate: ymd(2026, 7, 12), ScoreCurrent: 0.92, ScoreMax: 0.95,
	ImpactMax: 1240.5, ImpactTotal: 2481, ImpactPct: 42.3, ImpactActualSpend: 4200, ImpactExpectedSpend: 1718.5,
	DimensionValue: "us-east-1", DetectionSource: "aws",
}

func wantNotification(t *testing.T) upstream.ScheduledNotification {
	next := ts(t, "2026-07-20T18:05:00.000Z")
	return upstream.ScheduledNotification{
		ID: "clxnotif01", RecipientEmail: "finops@example.com", Subject: "Weekly canvas report",
		ScheduleType: "recurring", ScheduledAt: ts(t, "2026-07-20T18:00:00.000Z"), RecurrenceFrequency: "weekly",
		RecurrenceTimezone: "America/New_York", RecurrenceWeekday: 1, CronExpression: "0 14 * * 1", Status: "pending",
		NextAttemptAt: &next, CreatedAt: ts(t, "2026-07-01T00:00:00.000Z"), UpdatedAt: ts(t, "2026-07-02T00:00:00.000Z"),
		CanvasID: pointerTo("cnv_1"), IncludeAssistantAnalysis: true,
	}
}

func testQuery() *upstream.ExplorerQuery {
	return &upstream.ExplorerQuery{
		DateRange:   upstream.DateRange{Start: ymd(2026, 5, 31), End: ymd(2026, 6, 29)},
		GroupBy:     "product_product_name",
		CostType:    "line_item_unblended_cost",
		Granularity: "day",
	}
}

// methodCase is one of the 17 operations: how to call it, the request it
// must send, a canned answer and what the answer must decode to.
type methodCase struct {
	name  string
	op    string
	write bool // create or update: carries an Idempotency-Key, may be retried
	call  func(ctx context.Context, c *upstream.Client) (any, error)

	method string
	path   string     // escaped, below the base URL
	query  url.Values // nil: no query at all
	body   string     // JSON the request must carry; "" for none

	answer string
	want   func(t *testing.T) any
}

// methodCases returns every operation of the client.
func methodCases() []methodCase {
	listOpts := &upstream.ListOptions{Limit: 7, Cursor: "eyJhZnRlciI6N30"}
	listQuery := url.Values{"limit": {"7"}, "cursor": {"eyJhZnRlciI6N30"}}
	page := func(item string) string {
		return `{"data":[` + item + `],"pagination":{"limit":7,"has_more":true,"next_cursor":"eyJhZnRlciI6OH0"}}`
	}
	pagination := upstream.Pagination{Limit: 7, HasMore: true, NextCursor: pointerTo("eyJhZnRlciI6OH0")}
	return []methodCase{
		{
			name: "Recommendations.List", op: "listRecommendations",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Recommendations.List(ctx, listOpts)
			},
			method: "GET", path: "/v1/recommendations", query: listQuery,
			answer: page(recommendationJSON),
			want: func(t *testing.T) any {
				return &upstream.Page[upstream.Recommendation]{Data: []upstream.Recommendation{wantRecommendation}, Pagination: pagination}
			},
		},
		{
			name: "Anomalies.List", op: "listAnomalies",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Anomalies.List(ctx, listOpts)
			},
			method: "GET", path: "/v1/anomalies", query: listQuery,
			answer: page(anomalyJSON),
			want: func(t *testing.T) any {
				return &upstream.Page[upstream.Anomaly]{Data: []upstream.Anomaly{wantAnomaly}, Pagination: pagination}
			},
		},
		{
			name: "Explorer.Summary", op: "explorerSummary",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Explorer.Summary(ctx, testQuery())
			},
			method: "POST", path: "/v1/explorer/summary", body: explorerQueryJSON,
			answer: `{"data":{"cards":[{"title":"Total cost","description":"Sum","value":1234.56,"previousValue":1000}],"servedFromCache":true}}`,
			want: func(t *testing.T) any {
				return &upstream.ExplorerSummary{
					Cards:           []upstream.SummaryCard{{Title: "Total cost", Description: "Sum", Value: 1234.56, PreviousValue: 1000}},
					ServedFromCache: true,
				}
			},
		},
		{
			name: "Explorer.PreviousPeriod", op: "explorerPreviousPeriod",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Explorer.PreviousPeriod(ctx, testQuery())
			},
			method: "POST", path: "/v1/explorer/previous-period", body: explorerQueryJSON,
			answer: `{"data":{"currentTotal":120,"previousTotal":100,"changePercent":20,"servedFromCache":false}}`,
			want: func(t *testing.T) any {
				return &upstream.ExplorerPreviousPeriod{CurrentTotal: 120, PreviousTotal: 100, ChangePercent: 20}
			},
		},
		{
			name: "Explorer.History", op: "explorerHistory",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Explorer.History(ctx, testQuery())
			},
			method: "POST", path: "/v1/explorer/history", body: explorerQueryJSON,
			answer: `{"data":{"costRows":[{"product_product_name":"Amazon EC2","usage_date":20260531,"cost":12.5}],` +
				`"totalsByTimeRows":[{"usage_date":20260531,"cost":12.5}],"usageRows":[],"usageGroupRows":[],` +
				`"timeColumn":"usage_date","groupBy":"product_product_name","servedFromCache":false}}`,
			want: func(t *testing.T) any {
				return &upstream.ExplorerHistory{
					CostRows: []upstream.HistoryRow{{
						{Name: "product_product_name", Value: json.RawMessage(`"Amazon EC2"`)},
						{Name: "usage_date", Value: json.RawMessage(`20260531`)},
						{Name: "cost", Value: json.RawMessage(`12.5`)},
					}},
					TotalsByTimeRows: []json.RawMessage{json.RawMessage(`{"usage_date":20260531,"cost":12.5}`)},
					UsageRows:        []json.RawMessage{},
					UsageGroupRows:   []json.RawMessage{},
					TimeColumn:       "usage_date",
					GroupBy:          "product_product_name",
				}
			},
		},
		{
			name: "Explorer.Heatmap", op: "explorerHeatmap",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Explorer.Heatmap(ctx, testQuery())
			},
			method: "POST", path: "/v1/explorer/heatmap", body: explorerQueryJSON,
			answer: `{"data":{"rows":[{"dimension":"Amazon EC2","day":"2026-05-31","cost":3.25}],"servedFromCache":true}}`,
			want: func(t *testing.T) any {
				return &upstream.ExplorerHeatmap{
					Rows:            []upstream.HeatmapRow{{Dimension: "Amazon EC2", Day: ymd(2026, 5, 31), Cost: 3.25}},
					ServedFromCache: true,
				}
			},
		},
		{
			name: "Explorer.DimensionValues", op: "explorerDimensionValues",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Explorer.DimensionValues(ctx, "product_product_name")
			},
			method: "GET", path: "/v1/explorer/dimensions/product_product_name/values",
			answer: `{"data":{"items":[{"value":"Amazon EC2","cost":18450.12},{"value":"Amazon S3","cost":3200.5}],` +
				`"values":["Amazon EC2","Amazon S3"],"hasMore":false,"servedFromCache":true}}`,
			want: func(t *testing.T) any {
				return &upstream.DimensionValues{
					Items:           []upstream.DimensionValue{{Value: "Amazon EC2", Cost: 18450.12}, {Value: "Amazon S3", Cost: 3200.5}},
					Values:          []string{"Amazon EC2", "Amazon S3"},
					ServedFromCache: true,
				}
			},
		},
		{
			name: "Budgets.List", op: "listBudgets",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Budgets.List(ctx, listOpts)
			},
			method: "GET", path: "/v1/budgets", query: listQuery,
			answer: page(budgetJSON),
			want: func(t *testing.T) any {
				return &upstream.Page[upstream.Budget]{Data: []upstream.Budget{wantBudget(t)}, Pagination: pagination}
			},
		},
		{
			name: "Budgets.Create", op: "createBudget", write: true,
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Budgets.Create(ctx, &upstream.BudgetCreate{
					Name: "Q1 Cloud Budget", Period: "MONTHLY", Status: "DRAFT", NumberOfPeriods: 12,
					StartDate: ymd(2026, 1, 1), ExplorerReportID: "rpt_1", LookbackPeriod: pointerTo(3),
					GrowthRate: json.RawMessage("5"),
				}, nil)
			},
			method: "POST", path: "/v1/budgets",
			body: `{"name":"Q1 Cloud Budget","period":"MONTHLY","status":"DRAFT","numberOfPeriods":12,` +
				`"startDate":"2026-01-01","explorerReportId":"rpt_1","lookbackPeriod":3,"growthRate":5}`,
			answer: `{"data":{"budget":` + budgetJSON + `}}`,
			want:   func(t *testing.T) any { return pointerTo(wantBudget(t)) },
		},
		{
			name: "Budgets.LookbackPreview", op: "budgetLookbackGet",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Budgets.LookbackPreview(ctx)
			},
			method: "GET", path: "/v1/budgets/lookback",
			answer: `{"data":{"periods":[{"periodKey":"2026-01","actual":15200.5,"projected":16000}]}}`,
			want: func(t *testing.T) any {
				return &upstream.Lookback{Periods: []upstream.LookbackPeriod{{PeriodKey: "2026-01", Actual: 15200.5, Projected: pointerTo(16000.0)}}}
			},
		},
		{
			name: "Budgets.Lookback", op: "budgetLookbackPost",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Budgets.Lookback(ctx, &upstream.LookbackRequest{
					ExplorerReportID: "rpt_1", StartDate: ymd(2026, 1, 1), LookbackPeriod: pointerTo(3),
				})
			},
			method: "POST", path: "/v1/budgets/lookback",
			body:   `{"explorerReportId":"rpt_1","startDate":"2026-01-01","lookbackPeriod":3}`,
			answer: `{"data":{"periods":[{"periodKey":"2025-12","actual":15200.5}]}}`,
			want: func(t *testing.T) any {
				return &upstream.Lookback{Periods: []upstream.LookbackPeriod{{PeriodKey: "2025-12", Actual: 15200.5}}}
			},
		},
		{
			// A number set to 0 is sent: left out, it was the upstream's
			// default, an answer to another question than the one asked.
			name: "Budgets.Lookback of zero periods", op: "budgetLookbackPost",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Budgets.Lookback(ctx, &upstream.LookbackRequest{
					ExplorerReportID: "rpt_1", StartDate: ymd(2026, 1, 1), LookbackPeriod: pointerTo(0), NumberOfPeriods: pointerTo(0),
				})
			},
			method: "POST", path: "/v1/budgets/lookback",
			body:   `{"explorerReportId":"rpt_1","startDate":"2026-01-01","lookbackPeriod":0,"numberOfPeriods":0}`,
			answer: `{"data":{"periods":[]}}`,
			want: func(t *testing.T) any {
				return &upstream.Lookback{Periods: []upstream.LookbackPeriod{}}
			},
		},
		{
			name: "Budgets.Get", op: "getBudget",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Budgets.Get(ctx, "bud_1")
			},
			method: "GET", path: "/v1/budgets/bud_1",
			answer: `{"data":{"budget":` + budgetJSON + `,"metrics":{"totalTarget":192000,"totalActual":150000.5,"variance":41999.5},` +
				`"dimensions":[{"name":"billing_account_name","values":["Production","Staging"]}]}}`,
			want: func(t *testing.T) any {
				return &upstream.BudgetDetail{
					Budget:     wantBudget(t),
					Metrics:    upstream.BudgetMetrics{TotalTarget: 192000, TotalActual: 150000.5, Variance: 41999.5},
					Dimensions: []json.RawMessage{json.RawMessage(`{"name":"billing_account_name","values":["Production","Staging"]}`)},
				}
			},
		},
		{
			name: "Budgets.Update", op: "updateBudget", write: true,
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Budgets.Update(ctx, "bud_1", &upstream.BudgetUpdate{
					Name: pointerTo("Renamed"), LookbackPeriod: upstream.Null[int](),
				}, nil)
			},
			method: "PATCH", path: "/v1/budgets/bud_1",
			body:   `{"name":"Renamed","lookbackPeriod":null}`,
			answer: `{"data":{"budget":` + budgetJSON + `}}`,
			want:   func(t *testing.T) any { return pointerTo(wantBudget(t)) },
		},
		{
			name: "Budgets.Delete", op: "deleteBudget",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Budgets.Delete(ctx, "bud_1")
			},
			method: "DELETE", path: "/v1/budgets/bud_1",
			answer: `{"data":{"success":true}}`,
			want:   func(t *testing.T) any { return &upstream.DeleteResult{Success: true} },
		},
		{
			name: "Budgets.Actuals", op: "getBudgetActuals",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Budgets.Actuals(ctx, "bud_1")
			},
			method: "GET", path: "/v1/budgets/bud_1/actuals",
			answer: `{"data":{"actualsByPlanning":{"pln_1":{"2026-01":15200.5,"2026-02":14800.25}},` +
				`"accountActualsByPeriod":{"2026-01":15200.5,"2026-02":14800.25}}}`,
			want: func(t *testing.T) any {
				return &upstream.BudgetActuals{
					ActualsByPlanning:      map[string]map[string]float64{"pln_1": {"2026-01": 15200.5, "2026-02": 14800.25}},
					AccountActualsByPeriod: map[string]float64{"2026-01": 15200.5, "2026-02": 14800.25},
				}
			},
		},
		{
			name: "Budgets.Planning", op: "getBudgetPlanning",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Budgets.Planning(ctx, "bud_1")
			},
			method: "GET", path: "/v1/budgets/bud_1/planning",
			answer: `{"data":{"plannings":[` + planningJSON + `]}}`,
			want: func(t *testing.T) any {
				return &upstream.BudgetPlanning{Plannings: []upstream.Planning{wantPlanning(t)}}
			},
		},
		{
			name: "Notifications.ListScheduled", op: "listScheduledNotifications",
			call: func(ctx context.Context, c *upstream.Client) (any, error) {
				return c.Notifications.ListScheduled(ctx, listOpts)
			},
			method: "GET", path: "/v1/notifications/scheduled", query: listQuery,
			answer: `{"data":[` + notificationJSON + `],"pagination":{"limit":7,"has_more":false,"next_cursor":null,"total":36}}`,
			want: func(t *testing.T) any {
				return &upstream.Page[upstream.ScheduledNotification]{
					Data:       []upstream.ScheduledNotification{wantNotification(t)},
					Pagination: upstream.Pagination{Limit: 7, Total: pointerTo(36)},
				}
			},
		},
	}
}

// coveringOps returns cases after checking that they call want distinct
// operations (an operation may have several cases); of says which cases.
func coveringOps(t *testing.T, cases []methodCase, want int, of string) []methodCase {
	t.Helper()
	ops := map[string]bool{}
	for _, tc := range cases {
		ops[tc.op] = true
	}
	if len(ops) != want {
		t.Fatalf("%s: %d operations, want %d", of, len(ops), want)
	}
	return cases
}

func TestMethodsSendContractRequests(t *testing.T) {
	t.Parallel()
	for _, tc := range coveringOps(t, methodCases(), 17, "methodCases (the contract's operations)") {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, answer(http.StatusOK, tc.answer))
			c := newTestClient(t, f.URL)

			got, err := tc.call(keyCtx(t), c)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if diff := cmp.Diff(tc.want(t), got); diff != "" {
				t.Errorf("decoded answer mismatch (-want +got):\n%s", diff)
			}

			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream saw %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tc.method {
				t.Errorf("method = %s, want %s", r.Method, tc.method)
			}
			if want := basePath + tc.path; r.EscapedPath != want {
				t.Errorf("path = %s, want %s", r.EscapedPath, want)
			}
			wantQuery := tc.query
			if wantQuery == nil {
				wantQuery = url.Values{}
			}
			if diff := cmp.Diff(wantQuery, r.Query); diff != "" {
				t.Errorf("query mismatch (-want +got):\n%s", diff)
			}
			if strings.Contains(r.RawQuery, testKey) || strings.Contains(r.EscapedPath, testKey) {
				t.Errorf("the key travels in the URL: %s?%s", r.EscapedPath, r.RawQuery)
			}
			if diff := jsonDiff(t, tc.body, r.Body); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}

			wantHeader := map[string]string{
				"Authorization":   "Bearer " + testKey,
				"Accept":          "application/json",
				"Content-Type":    "",
				"Idempotency-Key": "",
			}
			if tc.body != "" {
				wantHeader["Content-Type"] = "application/json"
			}
			if tc.write {
				wantHeader["Idempotency-Key"] = "idem-1"
			}
			gotHeader := map[string]string{}
			for k := range wantHeader {
				gotHeader[k] = r.Header.Get(k)
			}
			if diff := cmp.Diff(wantHeader, gotHeader); diff != "" {
				t.Errorf("headers mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNoAPIKeySendsNothing(t *testing.T) {
	t.Parallel()
	ctxs := map[string]context.Context{
		"no key":    context.Background(),
		"empty key": upstream.WithAPIKey(context.Background(), ""),
	}
	for ctxName, ctx := range ctxs {
		for _, tc := range methodCases() {
			t.Run(ctxName+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, answer(http.StatusOK, tc.answer))
				c := newTestClient(t, f.URL)
				got, err := tc.call(ctx, c)
				if !errors.Is(err, upstream.ErrNoAPIKey) {
					t.Fatalf("err = %v, want ErrNoAPIKey", err)
				}
				if !isNilResult(got) {
					t.Errorf("result = %#v, want nil", got)
				}
				if n := f.count(); n != 0 {
					t.Errorf("upstream saw %d requests, want none", n)
				}
			})
		}
	}
}

// isNilResult reports whether a method's result, held in an any, is a nil pointer.
func isNilResult(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

func TestWithUserAgent(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(http.StatusOK, `{"data":{"success":true}}`))
	c := newTestClient(t, f.URL, upstream.WithUserAgent("gateway-test/9"))
	if _, err := c.Budgets.Delete(keyCtx(t), "bud_1"); err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[0].Header.Get("User-Agent"); got != "gateway-test/9" {
		t.Errorf("User-Agent = %q, want gateway-test/9", got)
	}
}

func TestNewClientBaseURL(t *testing.T) {
	t.Parallel()
	f := newFake(t, answer(http.StatusOK, `{"data":{"success":true}}`))
	tests := []struct {
		name     string
		base     string
		wantErr  bool
		wantPath string
	}{
		{name: "prefix", base: f.URL, wantPath: "/api/v1/budgets/b"},
		{name: "prefix with trailing slash", base: f.URL + "/", wantPath: "/api/v1/budgets/b"},
		{name: "no prefix", base: f.srv.URL, wantPath: "/v1/budgets/b"},
		{name: "deeper prefix", base: f.srv.URL + "/a/b", wantPath: "/a/b/v1/budgets/b"},
		{name: "relative", base: "/api", wantErr: true},
		{name: "other scheme", base: "ftp://example.com/api", wantErr: true},
		{name: "no host", base: "http:///api", wantErr: true},
		{name: "credentials", base: "http://user:pw@example.com/api", wantErr: true},
		{name: "query", base: "http://example.com/api?x=1", wantErr: true},
		{name: "fragment", base: "http://example.com/api#x", wantErr: true},
		{name: "unparsable", base: "http://exa mple.com/", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := upstream.NewClient(tc.base)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("NewClient(%q) succeeded, want an error", tc.base)
				}
				if strings.Contains(err.Error(), "pw") {
					t.Errorf("error repeats the credentials: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewClient(%q): %v", tc.base, err)
			}
			before := f.count()
			if _, err := c.Budgets.Delete(keyCtx(t), "b"); err != nil {
				t.Fatal(err)
			}
			reqs := f.requests()
			if got := reqs[len(reqs)-1].EscapedPath; len(reqs) != before+1 || got != tc.wantPath {
				t.Errorf("path = %s, want %s", got, tc.wantPath)
			}
		})
	}
}

func TestNewClientRejectsBadOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opt  upstream.Option
	}{
		{"zero timeout", upstream.WithTimeout(0)},
		{"negative timeout", upstream.WithTimeout(-time.Second)},
		{"nil http client", upstream.WithHTTPClient(nil)},
		{"zero attempts", upstream.WithRetry(upstream.RetryPolicy{})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := upstream.NewClient("http://example.com/api", tc.opt); err == nil {
				t.Errorf("NewClient with %s succeeded, want an error", tc.name)
			}
		})
	}
}

func TestWithTimeoutDoesNotChangeCallersHTTPClient(t *testing.T) {
	t.Parallel()
	hc := &http.Client{Timeout: time.Minute}
	if _, err := upstream.NewClient("http://example.com/api", upstream.WithHTTPClient(hc), upstream.WithTimeout(time.Second)); err != nil {
		t.Fatal(err)
	}
	if hc.Timeout != time.Minute {
		t.Errorf("caller's http.Client.Timeout = %v after NewClient, want it left at 1m", hc.Timeout)
	}
}
