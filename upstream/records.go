package upstream

import (
	"bytes"
	"encoding/json"

	"github.com/go-json-experiment/json/jsontext"
)

// The decoding tables of the contract's records. A member marked required
// (true) must be in the answer and not null; the others may be missing or
// null. Each type's doc comment lists the members it requires.

var paginationRecord = newRecord[Pagination](nil,
	integer("limit", false, func(p *Pagination) *int { return &p.Limit }),
	boolean("has_more", true, func(p *Pagination) *bool { return &p.HasMore }),
	optional("next_cursor", func(p *Pagination) **string { return &p.NextCursor }, readString),
	optional("total", func(p *Pagination) **int { return &p.Total }, readInt32), // a connection's totalCount
)

// UnmarshalJSONFrom decodes a pagination object; has_more is required.
func (p *Pagination) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return paginationRecord.decodeChecked(d, p)
}

var recommendationRecord = newRecord(func(r *Recommendation) *map[string]json.RawMessage { return &r.Extra },
	str("recommendation_id", true, func(r *Recommendation) *string { return &r.RecommendationID }),
	str("recommendation_name", true, func(r *Recommendation) *string { return &r.RecommendationName }),
	num("estimated_monthly_savings", true, func(r *Recommendation) *float64 { return &r.EstimatedMonthlySavings }),
	str("implementation_effort", true, func(r *Recommendation) *string { return &r.ImplementationEffort }),
	str("category", true, func(r *Recommendation) *string { return &r.Category }),
	str("action_type", true, func(r *Recommendation) *string { return &r.ActionType }),
	str("account_name", true, func(r *Recommendation) *string { return &r.AccountName }),
	str("region", true, func(r *Recommendation) *string { return &r.Region }),
	str("resource_id", true, func(r *Recommendation) *string { return &r.ResourceID }),
)

// UnmarshalJSONFrom decodes a recommendation in one pass, unknown members
// into Extra. Every member of the contract's list is required.
func (r *Recommendation) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	*r = Recommendation{}
	return recommendationRecord.decodeChecked(d, r)
}

// UnmarshalJSON decodes a recommendation by the client's rules.
func (r *Recommendation) UnmarshalJSON(b []byte) error {
	return decodeJSON(b, r, func(d *jsontext.Decoder, r *Recommendation) error { return r.UnmarshalJSONFrom(d) })
}

var anomalyRecord = newRecord(func(a *Anomaly) *map[string]json.RawMessage { return &a.Extra },
	str("anomaly_id", true, func(a *Anomaly) *string { return &a.AnomalyID }),
	str("service", true, func(a *Anomaly) *string { return &a.Service }),
	date("start_date", true, func(a *Anomaly) *Date { return &a.StartDate }),
	date("end_date", true, func(a *Anomaly) *Date { return &a.EndDate }),
	num("score_current", true, func(a *Anomaly) *float64 { return &a.ScoreCurrent }),
	num("score_max", true, func(a *Anomaly) *float64 { return &a.ScoreMax }),
	num("impact_max", true, func(a *Anomaly) *float64 { return &a.ImpactMax }),
	num("impact_total", true, func(a *Anomaly) *float64 { return &a.ImpactTotal }),
	num("impact_pct", true, func(a *Anomaly) *float64 { return &a.ImpactPct }),
	num("impact_actual_spend", true, func(a *Anomaly) *float64 { return &a.ImpactActualSpend }),
	num("impact_expected_spend", true, func(a *Anomaly) *float64 { return &a.ImpactExpectedSpend }),
	str("dimension_value", true, func(a *Anomaly) *string { return &a.DimensionValue }),
	str("detection_source", true, func(a *Anomaly) *string { return &a.DetectionSource }),
)

// UnmarshalJSONFrom decodes an anomaly in one pass, unknown members into
// Extra. Every member of the contract's list is required.
func (a *Anomaly) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	*a = Anomaly{}
	return anomalyRecord.decodeChecked(d, a)
}

// UnmarshalJSON decodes an anomaly by the client's rules.
func (a *Anomaly) UnmarshalJSON(b []byte) error {
	return decodeJSON(b, a, func(d *jsontext.Decoder, a *Anomaly) error { return a.UnmarshalJSONFrom(d) })
}

var explorerReportRecord = newRecord[ExplorerReport](nil,
	str("id", true, func(r *ExplorerReport) *string { return &r.ID }),
	str("name", true, func(r *ExplorerReport) *string { return &r.Name }),
)

// UnmarshalJSONFrom decodes an Explorer report reference; id and name are required.
func (r *ExplorerReport) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return explorerReportRecord.decodeChecked(d, r)
}

var userRecord = newRecord[User](nil,
	str("id", true, func(u *User) *string { return &u.ID }),
	str("firstName", true, func(u *User) *string { return &u.FirstName }),
	str("lastName", true, func(u *User) *string { return &u.LastName }),
	str("email", true, func(u *User) *string { return &u.Email }),
)

// UnmarshalJSONFrom decodes a user; every member is required.
func (u *User) UnmarshalJSONFrom(d *jsontext.Decoder) error { return userRecord.decodeChecked(d, u) }

var planningRecord = newRecord[Planning](nil,
	str("id", true, func(p *Planning) *string { return &p.ID }),
	str("budgetId", true, func(p *Planning) *string { return &p.BudgetID }),
	str("dimension1", true, func(p *Planning) *string { return &p.Dimension1 }),
	str("dimension2", true, func(p *Planning) *string { return &p.Dimension2 }),
	num("previousMonth", true, func(p *Planning) *float64 { return &p.PreviousMonth }),
	num("avgLookback", true, func(p *Planning) *float64 { return &p.AvgLookback }),
	num("percentGrowth", true, func(p *Planning) *float64 { return &p.PercentGrowth }),
	optional("percentSpend", func(p *Planning) **float64 { return &p.PercentSpend }, readFloat),
	field[Planning]{"targetItems", true, func(d *jsontext.Decoder, p *Planning) (bool, error) {
		return readAmounts(d, &p.TargetItems, nil)
	}},
	str("targetType", true, func(p *Planning) *string { return &p.TargetType }),
	timestamp("createdAt", true, func(p *Planning) *Timestamp { return &p.CreatedAt }),
)

// UnmarshalJSONFrom decodes a planning row. Every member is required but
// percentSpend (nullable); dimension2 may be empty, not missing.
func (p *Planning) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return planningRecord.decodeChecked(d, p)
}

// budgetFields are the members of a budget record, for Budget and for the
// wire forms of the answers that carry one.
func budgetFields[T any](at func(*T) *Budget) []field[T] {
	return []field[T]{
		str("id", true, func(v *T) *string { return &at(v).ID }),
		str("name", true, func(v *T) *string { return &at(v).Name }),
		str("targetType", true, func(v *T) *string { return &at(v).TargetType }),
		str("period", true, func(v *T) *string { return &at(v).Period }),
		str("status", true, func(v *T) *string { return &at(v).Status }),
		integer32("numberOfPeriods", true, func(v *T) *int { return &at(v).NumberOfPeriods }),
		date("startDate", true, func(v *T) *Date { return &at(v).StartDate }),
		date("endDate", true, func(v *T) *Date { return &at(v).EndDate }),
		optional("lookbackPeriod", func(v *T) **int { return &at(v).LookbackPeriod }, readInt32),
		raw("budgetType", func(v *T) *json.RawMessage { return &at(v).BudgetType }),
		raw("startingValue", func(v *T) *json.RawMessage { return &at(v).StartingValue }),
		raw("customStartingValue", func(v *T) *json.RawMessage { return &at(v).CustomStartingValue }),
		raw("growthRate", func(v *T) *json.RawMessage { return &at(v).GrowthRate }),
		boolean("normalizationPeriod", true, func(v *T) *bool { return &at(v).NormalizationPeriod }),
		str("organizationId", true, func(v *T) *string { return &at(v).OrganizationID }),
		integer64("serviceClientId", true, func(v *T) *int64 { return &at(v).ServiceClientID }),
		str("creatorId", true, func(v *T) *string { return &at(v).CreatorID }),
		str("explorerReportId", true, func(v *T) *string { return &at(v).ExplorerReportID }),
		timestamp("createdAt", true, func(v *T) *Timestamp { return &at(v).CreatedAt }),
		timestamp("updatedAt", true, func(v *T) *Timestamp { return &at(v).UpdatedAt }),
		objectPtr("explorerReport", explorerReportRecord, func(v *T) **ExplorerReport { return &at(v).ExplorerReport }),
		objectPtr("creator", userRecord, func(v *T) **User { return &at(v).Creator }),
		records("plannings", false, planningRecord, func(v *T) *[]Planning { return &at(v).Plannings }),
	}
}

var budgetRecord = newRecord(nil, budgetFields(func(b *Budget) *Budget { return b })...)

// UnmarshalJSONFrom decodes a budget record in one pass, refusing one
// without a member Budget requires.
func (b *Budget) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return budgetRecord.decodeChecked(d, b)
}

var metricsRecord = newRecord[BudgetMetrics](nil,
	num("totalTarget", true, func(m *BudgetMetrics) *float64 { return &m.TotalTarget }),
	num("totalActual", true, func(m *BudgetMetrics) *float64 { return &m.TotalActual }),
	num("variance", true, func(m *BudgetMetrics) *float64 { return &m.Variance }),
)

// UnmarshalJSONFrom decodes budget metrics; all three are required.
func (m *BudgetMetrics) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return metricsRecord.decodeChecked(d, m)
}

// budgetWire is a budget as an answer may carry it, with the single-budget
// read's metrics and dimensions beside its members, and, for an answer that
// wraps it, the wrapped one ({"budget": {...}}).
type budgetWire struct {
	Budget
	Metrics    BudgetMetrics
	Dimensions []json.RawMessage
	Wrapped    *budgetWire
	seen, null uint64 // the members present, and null, by budgetWireRecord's indexes
}

var budgetWireRecord = func() *record[budgetWire] {
	fs := budgetFields(func(w *budgetWire) *Budget { return &w.Budget })
	fs = append(fs,
		object("metrics", false, metricsRecord, func(w *budgetWire) *BudgetMetrics { return &w.Metrics }),
		rawList("dimensions", false, func(w *budgetWire) *[]json.RawMessage { return &w.Dimensions }),
	)
	return newRecord(nil, fs...)
}()

// The indexes of the members budgetWire adds to a budget's.
var (
	wireMetrics    = budgetWireRecord.index["metrics"]
	wireDimensions = budgetWireRecord.index["dimensions"]
)

func init() {
	// "budget" holds a wrapped budget (with its own metrics and
	// dimensions, perhaps). Added here: its reader refers to the table.
	budgetWireRecord.fields = append(budgetWireRecord.fields, field[budgetWire]{"budget", false,
		func(d *jsontext.Decoder, w *budgetWire) (bool, error) {
			if d.PeekKind() == 'n' {
				_, err := d.ReadToken()
				return false, err
			}
			w.Wrapped = new(budgetWire)
			if err := w.Wrapped.decode(d); err != nil {
				return false, err
			}
			// Checked here, where the decoder stands just past it, so
			// its errors name it: data.budget.name is missing.
			return true, budgetRecord.missing(d, w.Wrapped.seen, w.Wrapped.null)
		}})
	budgetWireRecord.index["budget"] = len(budgetWireRecord.fields) - 1
}

// decode reads one wire object. A budget's members come first in the
// table, so seen has their bits where budgetRecord has them.
func (w *budgetWire) decode(d *jsontext.Decoder) error {
	var err error
	w.seen, w.null, err = budgetWireRecord.decode(d, w)
	return err
}

// has reports whether member i was present.
func (w *budgetWire) has(i int) bool { return w.seen&(1<<i) != 0 }

// budget returns the budget the answer carries: the wrapped one, else the
// bare members, which must then be complete. The decoder stands just past
// the answer's data object.
func (w *budgetWire) budget(d *jsontext.Decoder) (*budgetWire, error) {
	if w.Wrapped != nil {
		return w.Wrapped, nil
	}
	if w.seen&budgetRecord.required == 0 {
		return nil, &memberError{path: path(d, "budget"), what: "is missing"}
	}
	return w, budgetRecord.missing(d, w.seen, w.null)
}

// budgetDetailWire is the data of the single-budget read: {budget, metrics,
// dimensions}, a bare budget with metrics and dimensions among its members,
// or {budget: {..., metrics, dimensions}}. The client decodes the answer
// straight into it.
type budgetDetailWire struct{ BudgetDetail }

// UnmarshalJSONFrom reads every placement the contract's words allow (see
// BudgetDetail).
func (w *budgetDetailWire) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return decodeDetail(d, &w.BudgetDetail)
}

func decodeDetail(d *jsontext.Decoder, out *BudgetDetail) error {
	var outer budgetWire
	if err := outer.decode(d); err != nil {
		return err
	}
	b, err := outer.budget(d)
	if err != nil {
		return err
	}
	detail := BudgetDetail{Budget: b.Budget}
	// Metrics and dimensions beside the budget, inside it, or both.
	inner := outer.Wrapped
	switch {
	case outer.has(wireMetrics) && inner != nil && inner.has(wireMetrics):
		if outer.Metrics != inner.Metrics {
			return &memberError{path: path(d, "metrics"), what: "and " + path(d, "budget.metrics") + " disagree"}
		}
		detail.Metrics = outer.Metrics
	case outer.has(wireMetrics):
		detail.Metrics = outer.Metrics
	case inner != nil && inner.has(wireMetrics):
		detail.Metrics = inner.Metrics
	default:
		return &memberError{path: path(d, "metrics"), what: "is missing"}
	}
	switch {
	case outer.has(wireDimensions) && inner != nil && inner.has(wireDimensions):
		if !sameJSON(outer.Dimensions, inner.Dimensions) {
			return &memberError{path: path(d, "dimensions"), what: "and " + path(d, "budget.dimensions") + " disagree"}
		}
		detail.Dimensions = outer.Dimensions
	case outer.has(wireDimensions):
		detail.Dimensions = outer.Dimensions
	case inner != nil && inner.has(wireDimensions):
		detail.Dimensions = inner.Dimensions
	default:
		return &memberError{path: path(d, "dimensions"), what: "is missing"}
	}
	*out = detail
	return nil
}

// sameJSON reports whether two lists of JSON values are equal, white space aside.
func sameJSON(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := jsontext.Value(bytes.Clone(a[i])), jsontext.Value(bytes.Clone(b[i]))
		if x.Canonicalize() != nil || y.Canonicalize() != nil || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}

// UnmarshalJSON reads the single-budget read's data by the client's rules.
func (d *BudgetDetail) UnmarshalJSON(b []byte) error { return decodeJSON(b, d, decodeDetail) }

// budgetResult is the data of create and update: {budget}, or a bare budget.
type budgetResult struct{ Budget Budget }

// UnmarshalJSONFrom reads either form; {} is refused (data.budget is missing).
func (r *budgetResult) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	var w budgetWire
	if err := w.decode(d); err != nil {
		return err
	}
	b, err := w.budget(d)
	if err != nil {
		return err
	}
	r.Budget = b.Budget
	return nil
}

var deleteRecord = newRecord[DeleteResult](nil,
	boolean("success", true, func(r *DeleteResult) *bool { return &r.Success }),
)

// UnmarshalJSONFrom decodes the answer of deleteBudget; success is required.
func (r *DeleteResult) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return deleteRecord.decodeChecked(d, r)
}

var actualsRecord = newRecord[BudgetActuals](nil,
	field[BudgetActuals]{"actualsByPlanning", true, func(d *jsontext.Decoder, a *BudgetActuals) (bool, error) {
		periods := new(interner) // every planning row has the same periods
		m := a.ActualsByPlanning
		if m == nil {
			m = map[string]map[string]float64{}
		}
		ok, err := readMembers(d, nil, func(name string) error {
			var row map[string]float64
			present, err := readAmounts(d, &row, periods)
			if err == nil && !present {
				return &memberError{path: path(d, ""), what: "is null"} // a row is an object of amounts
			}
			m[name] = row
			return err
		})
		if ok && err == nil {
			a.ActualsByPlanning = m
		}
		return ok, err
	}},
	field[BudgetActuals]{"accountActualsByPeriod", true, func(d *jsontext.Decoder, a *BudgetActuals) (bool, error) {
		return readAmounts(d, &a.AccountActualsByPeriod, nil)
	}},
)

// UnmarshalJSONFrom decodes a budget's actuals; both maps are required.
func (a *BudgetActuals) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return actualsRecord.decodeChecked(d, a)
}

var budgetPlanningRecord = newRecord[BudgetPlanning](nil,
	records("plannings", true, planningRecord, func(p *BudgetPlanning) *[]Planning { return &p.Plannings }),
)

// UnmarshalJSONFrom decodes a planning grid; plannings is required.
func (p *BudgetPlanning) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return budgetPlanningRecord.decodeChecked(d, p)
}

var lookbackPeriodRecord = newRecord[LookbackPeriod](nil,
	str("periodKey", true, func(p *LookbackPeriod) *string { return &p.PeriodKey }),
	num("actual", true, func(p *LookbackPeriod) *float64 { return &p.Actual }),
	optional("projected", func(p *LookbackPeriod) **float64 { return &p.Projected }, readFloat),
)

var lookbackRecord = newRecord[Lookback](nil,
	records("periods", true, lookbackPeriodRecord, func(l *Lookback) *[]LookbackPeriod { return &l.Periods }),
)

// UnmarshalJSONFrom decodes a lookback: periods is required, and each
// period's periodKey and actual (projected only the GET form sends).
func (l *Lookback) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return lookbackRecord.decodeChecked(d, l)
}

var notificationRecord = newRecord[ScheduledNotification](nil,
	str("id", true, func(n *ScheduledNotification) *string { return &n.ID }),
	str("recipientEmail", true, func(n *ScheduledNotification) *string { return &n.RecipientEmail }),
	str("subject", true, func(n *ScheduledNotification) *string { return &n.Subject }),
	str("scheduleType", true, func(n *ScheduledNotification) *string { return &n.ScheduleType }),
	timestamp("scheduledAt", true, func(n *ScheduledNotification) *Timestamp { return &n.ScheduledAt }),
	str("recurrenceFrequency", true, func(n *ScheduledNotification) *string { return &n.RecurrenceFrequency }),
	str("recurrenceTimezone", true, func(n *ScheduledNotification) *string { return &n.RecurrenceTimezone }),
	integer32("recurrenceWeekday", true, func(n *ScheduledNotification) *int { return &n.RecurrenceWeekday }),
	optional("recurrenceDayOfMonth", func(n *ScheduledNotification) **int { return &n.RecurrenceDayOfMonth }, readInt32),
	str("cronExpression", true, func(n *ScheduledNotification) *string { return &n.CronExpression }),
	str("status", true, func(n *ScheduledNotification) *string { return &n.Status }),
	optional("sentAt", func(n *ScheduledNotification) **Timestamp { return &n.SentAt }, readTimestamp),
	optional("errorMessage", func(n *ScheduledNotification) **string { return &n.ErrorMessage }, readString),
	optional("nextAttemptAt", func(n *ScheduledNotification) **Timestamp { return &n.NextAttemptAt }, readTimestamp),
	timestamp("createdAt", true, func(n *ScheduledNotification) *Timestamp { return &n.CreatedAt }),
	timestamp("updatedAt", true, func(n *ScheduledNotification) *Timestamp { return &n.UpdatedAt }),
	optional("canvasId", func(n *ScheduledNotification) **string { return &n.CanvasID }, readString),
	optional("explorerReportId", func(n *ScheduledNotification) **string { return &n.ExplorerReportID }, readString),
	boolean("includeAssistantAnalysis", true, func(n *ScheduledNotification) *bool { return &n.IncludeAssistantAnalysis }),
)

// UnmarshalJSONFrom decodes a scheduled notification in one pass, refusing
// one without a member ScheduledNotification requires.
func (n *ScheduledNotification) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return notificationRecord.decodeChecked(d, n)
}

var summaryCardRecord = newRecord[SummaryCard](nil,
	str("title", true, func(c *SummaryCard) *string { return &c.Title }),
	str("description", true, func(c *SummaryCard) *string { return &c.Description }),
	num("value", true, func(c *SummaryCard) *float64 { return &c.Value }),
	num("previousValue", true, func(c *SummaryCard) *float64 { return &c.PreviousValue }),
)

var summaryRecord = newRecord[ExplorerSummary](nil,
	records("cards", true, summaryCardRecord, func(s *ExplorerSummary) *[]SummaryCard { return &s.Cards }),
	boolean("servedFromCache", true, func(s *ExplorerSummary) *bool { return &s.ServedFromCache }),
)

// UnmarshalJSONFrom decodes an Explorer summary; every member is required,
// and every member of each card.
func (s *ExplorerSummary) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return summaryRecord.decodeChecked(d, s)
}

var previousPeriodRecord = newRecord[ExplorerPreviousPeriod](nil,
	num("currentTotal", true, func(p *ExplorerPreviousPeriod) *float64 { return &p.CurrentTotal }),
	num("previousTotal", true, func(p *ExplorerPreviousPeriod) *float64 { return &p.PreviousTotal }),
	num("changePercent", true, func(p *ExplorerPreviousPeriod) *float64 { return &p.ChangePercent }),
	boolean("servedFromCache", true, func(p *ExplorerPreviousPeriod) *bool { return &p.ServedFromCache }),
)

// UnmarshalJSONFrom decodes an Explorer previous-period comparison; every
// member is required.
func (p *ExplorerPreviousPeriod) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return previousPeriodRecord.decodeChecked(d, p)
}

var historyRecord = newRecord[ExplorerHistory](nil,
	field[ExplorerHistory]{"costRows", true, func(d *jsontext.Decoder, h *ExplorerHistory) (bool, error) {
		rows := new(rowReader)
		return readList(d, &h.CostRows, func(d *jsontext.Decoder, r *HistoryRow) error {
			ok, err := rows.read(d, r)
			if err == nil && !ok {
				return &memberError{path: path(d, ""), what: "is null"}
			}
			return err
		})
	}},
	rawList("totalsByTimeRows", true, func(h *ExplorerHistory) *[]json.RawMessage { return &h.TotalsByTimeRows }),
	rawList("usageRows", true, func(h *ExplorerHistory) *[]json.RawMessage { return &h.UsageRows }),
	rawList("usageGroupRows", true, func(h *ExplorerHistory) *[]json.RawMessage { return &h.UsageGroupRows }),
	str("timeColumn", true, func(h *ExplorerHistory) *string { return &h.TimeColumn }),
	str("groupBy", true, func(h *ExplorerHistory) *string { return &h.GroupBy }),
	boolean("servedFromCache", true, func(h *ExplorerHistory) *bool { return &h.ServedFromCache }),
)

// UnmarshalJSON reads a row from a JSON object, as the client does.
func (r *HistoryRow) UnmarshalJSON(b []byte) error {
	return decodeJSON(b, r, func(d *jsontext.Decoder, r *HistoryRow) error {
		_, err := new(rowReader).read(d, r)
		return err
	})
}

// UnmarshalJSONFrom decodes an Explorer history; every member is required.
// The rows' columns are dynamic: HistoryRow reads them.
func (h *ExplorerHistory) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return historyRecord.decodeChecked(d, h)
}

var heatmapRowRecord = newRecord[HeatmapRow](nil,
	str("dimension", true, func(r *HeatmapRow) *string { return &r.Dimension }),
	date("day", true, func(r *HeatmapRow) *Date { return &r.Day }),
	num("cost", true, func(r *HeatmapRow) *float64 { return &r.Cost }),
)

var heatmapRecord = newRecord[ExplorerHeatmap](nil,
	records("rows", true, heatmapRowRecord, func(h *ExplorerHeatmap) *[]HeatmapRow { return &h.Rows }),
	boolean("servedFromCache", true, func(h *ExplorerHeatmap) *bool { return &h.ServedFromCache }),
)

// UnmarshalJSONFrom decodes an Explorer heatmap; every member is required,
// and every member of each row.
func (h *ExplorerHeatmap) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return heatmapRecord.decodeChecked(d, h)
}

var dimensionValueRecord = newRecord[DimensionValue](nil,
	str("value", true, func(v *DimensionValue) *string { return &v.Value }),
	num("cost", true, func(v *DimensionValue) *float64 { return &v.Cost }),
)

var dimensionValuesRecord = newRecord[DimensionValues](nil,
	records("items", true, dimensionValueRecord, func(v *DimensionValues) *[]DimensionValue { return &v.Items }),
	listOf("values", true, func(v *DimensionValues) *[]string { return &v.Values }, func(d *jsontext.Decoder, s *string) error {
		ok, err := readString(d, s)
		if err == nil && !ok {
			return &memberError{path: path(d, ""), what: "is null"}
		}
		return err
	}),
	boolean("hasMore", true, func(v *DimensionValues) *bool { return &v.HasMore }),
	boolean("servedFromCache", true, func(v *DimensionValues) *bool { return &v.ServedFromCache }),
)

// UnmarshalJSONFrom decodes the values of a dimension; every member is
// required, and every member of each item.
func (v *DimensionValues) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return dimensionValuesRecord.decodeChecked(d, v)
}
