package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// Pagination is the pagination object of every list answer. Decoding
// requires has_more, the one member the walk depends on; limit, next_cursor
// and total may be missing.
type Pagination struct {
	Limit      int     `json:"limit"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
	// Total is sent only by the scheduled-notifications list. It must fit
	// in 32 bits: it becomes a connection's totalCount, a GraphQL Int.
	Total *int `json:"total,omitempty"`
}

// Page is one page of a list answer.
type Page[T any] struct {
	Data       []T        `json:"data"`
	Pagination Pagination `json:"pagination"`
}

// ListOptions selects a page of a list operation. The zero value asks for the
// first page at the upstream's default size (50).
type ListOptions struct {
	Limit  int    // 1–200; 0 leaves it to the upstream
	Cursor string // pagination.next_cursor of the previous page, unchanged
}

// Recommendation is a cost optimization recommendation. It is an open object:
// members beyond the contract's list are kept in Extra. Names are exact: a
// member whose name differs from a listed one only in case ("Region") is
// another member, kept in Extra. Decoding requires every listed member.
type Recommendation struct {
	RecommendationID        string  `json:"recommendation_id"`
	RecommendationName      string  `json:"recommendation_name"`
	EstimatedMonthlySavings float64 `json:"estimated_monthly_savings"`
	ImplementationEffort    string  `json:"implementation_effort"`
	Category                string  `json:"category"`
	ActionType              string  `json:"action_type"`
	AccountName             string  `json:"account_name"`
	Region                  string  `json:"region"`
	ResourceID              string  `json:"resource_id"`

	Extra map[string]json.RawMessage `json:"-"`
}

type recommendationFields Recommendation

// MarshalJSON writes the known members and Extra.
func (r Recommendation) MarshalJSON() ([]byte, error) {
	return joinOpen(recommendationFields(r), r.Extra)
}

// Anomaly is a detected cost anomaly. It is an open object: members beyond the
// contract's list are kept in Extra, names matched exactly (a member
// "Service" is another than "service"). Decoding requires every listed member.
type Anomaly struct {
	AnomalyID           string  `json:"anomaly_id"`
	Service             string  `json:"service"`
	StartDate           Date    `json:"start_date"`
	EndDate             Date    `json:"end_date"`
	ScoreCurrent        float64 `json:"score_current"`
	ScoreMax            float64 `json:"score_max"`
	ImpactMax           float64 `json:"impact_max"`
	ImpactTotal         float64 `json:"impact_total"`
	ImpactPct           float64 `json:"impact_pct"`
	ImpactActualSpend   float64 `json:"impact_actual_spend"`
	ImpactExpectedSpend float64 `json:"impact_expected_spend"`
	DimensionValue      string  `json:"dimension_value"`
	DetectionSource     string  `json:"detection_source"`

	Extra map[string]json.RawMessage `json:"-"`
}

type anomalyFields Anomaly

// MarshalJSON writes the known members and Extra.
func (a Anomaly) MarshalJSON() ([]byte, error) { return joinOpen(anomalyFields(a), a.Extra) }

// ExplorerReport is the Explorer report a budget is based on. Decoding
// requires both members.
type ExplorerReport struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// User is the creator of a budget. Decoding requires every member.
type User struct {
	ID        string `json:"id"`
	FirstName string `json:"firstName"`
	LastName  string `json:"lastName"`
	Email     string `json:"email"`
}

// Budget is a budget record. The four fields whose types the contract does
// not give (BudgetType, StartingValue, CustomStartingValue, GrowthRate) are
// kept as raw JSON; JSON null arrives as the literal null.
//
// Decoding requires id, name, targetType, period, status, numberOfPeriods,
// startDate, endDate, normalizationPeriod, organizationId, serviceClientId,
// creatorId, explorerReportId, createdAt and updatedAt: a budget without
// one is refused, not read as a zero value. numberOfPeriods and
// lookbackPeriod must fit in 32 bits (the gateway shows them as GraphQL's
// Int); serviceClientId in 64. The nullable members
// (lookbackPeriod and the four above) and explorerReport, creator and
// plannings may be missing; when present, the nested records require their
// own members.
type Budget struct {
	ID                  string          `json:"id"`
	Name                string          `json:"name"`
	TargetType          string          `json:"targetType"`
	Period              string          `json:"period"`
	Status              string          `json:"status"`
	NumberOfPeriods     int             `json:"numberOfPeriods"`
	StartDate           Date            `json:"startDate"`
	EndDate             Date            `json:"endDate"`
	LookbackPeriod      *int            `json:"lookbackPeriod"`
	BudgetType          json.RawMessage `json:"budgetType"`
	StartingValue       json.RawMessage `json:"startingValue"`
	CustomStartingValue json.RawMessage `json:"customStartingValue"`
	GrowthRate          json.RawMessage `json:"growthRate"`
	NormalizationPeriod bool            `json:"normalizationPeriod"`
	OrganizationID      string          `json:"organizationId"`
	ServiceClientID     int64           `json:"serviceClientId"`
	CreatorID           string          `json:"creatorId"`
	ExplorerReportID    string          `json:"explorerReportId"`
	CreatedAt           Timestamp       `json:"createdAt"`
	UpdatedAt           Timestamp       `json:"updatedAt"`
	ExplorerReport      *ExplorerReport `json:"explorerReport"`
	Creator             *User           `json:"creator"`
	// Plannings is nil when the record came without planning rows; then the
	// planning grid (BudgetsService.Planning) has them.
	Plannings []Planning `json:"plannings"`
}

// Planning is a row of a budget's planning grid. Decoding requires every
// member but percentSpend (nullable); dimension2 may be empty, not missing.
// Every target of targetItems must be a number (null is refused).
type Planning struct {
	ID            string             `json:"id"`
	BudgetID      string             `json:"budgetId"`
	Dimension1    string             `json:"dimension1"`
	Dimension2    string             `json:"dimension2"`
	PreviousMonth float64            `json:"previousMonth"`
	AvgLookback   float64            `json:"avgLookback"`
	PercentGrowth float64            `json:"percentGrowth"`
	PercentSpend  *float64           `json:"percentSpend"`
	TargetItems   map[string]float64 `json:"targetItems"`
	TargetType    string             `json:"targetType"`
	CreatedAt     Timestamp          `json:"createdAt"`
}

// BudgetMetrics are the totals the single-budget read adds. Decoding
// requires all three.
type BudgetMetrics struct {
	TotalTarget float64 `json:"totalTarget"`
	TotalActual float64 `json:"totalActual"`
	Variance    float64 `json:"variance"`
}

// BudgetDetail is the answer of the single-budget read: the budget with its
// metrics and dimensions.
//
// The contract says the read returns "{budget} with metrics and dimensions",
// which upstreams read in three ways, all accepted: {budget, metrics,
// dimensions}; {budget: {..., metrics, dimensions}}; and a bare budget with
// metrics and dimensions among its members. When both the data object and
// its budget carry metrics (or dimensions), they must agree, or the answer
// is refused: the client cannot know which one is meant. Metrics (all three
// numbers) and dimensions are required, wherever they are.
type BudgetDetail struct {
	Budget     Budget            `json:"budget"`
	Metrics    BudgetMetrics     `json:"metrics"`
	Dimensions []json.RawMessage `json:"dimensions"`
}

// BudgetCreate is the body of createBudget. The contract names these fields
// and accepts others; the four untyped fields are raw JSON and left out when nil.
type BudgetCreate struct {
	Name                string          `json:"name"`
	TargetType          string          `json:"targetType,omitempty"`
	Period              string          `json:"period,omitempty"`
	Status              string          `json:"status,omitempty"`
	NumberOfPeriods     int             `json:"numberOfPeriods"`
	StartDate           Date            `json:"startDate"`
	ExplorerReportID    string          `json:"explorerReportId"`
	LookbackPeriod      *int            `json:"lookbackPeriod,omitempty"`
	BudgetType          json.RawMessage `json:"budgetType,omitempty"`
	StartingValue       json.RawMessage `json:"startingValue,omitempty"`
	CustomStartingValue json.RawMessage `json:"customStartingValue,omitempty"`
	GrowthRate          json.RawMessage `json:"growthRate,omitempty"`
	NormalizationPeriod *bool           `json:"normalizationPeriod,omitempty"`
}

// BudgetUpdate is the body of updateBudget: only the fields that are set are
// sent. LookbackPeriod can be cleared with Null; the raw JSON fields are
// cleared by setting them to the literal null.
type BudgetUpdate struct {
	Name                *string         `json:"name,omitempty"`
	TargetType          *string         `json:"targetType,omitempty"`
	Period              *string         `json:"period,omitempty"`
	Status              *string         `json:"status,omitempty"`
	NumberOfPeriods     *int            `json:"numberOfPeriods,omitempty"`
	StartDate           *Date           `json:"startDate,omitempty"`
	ExplorerReportID    *string         `json:"explorerReportId,omitempty"`
	LookbackPeriod      Nullable[int]   `json:"lookbackPeriod,omitzero"`
	BudgetType          json.RawMessage `json:"budgetType,omitempty"`
	StartingValue       json.RawMessage `json:"startingValue,omitempty"`
	CustomStartingValue json.RawMessage `json:"customStartingValue,omitempty"`
	GrowthRate          json.RawMessage `json:"growthRate,omitempty"`
	NormalizationPeriod *bool           `json:"normalizationPeriod,omitempty"`
}

// DeleteResult is the answer of deleteBudget. Decoding requires success.
type DeleteResult struct {
	Success bool `json:"success"`
	// AlreadyDeleted is set, with Success, when the budget was found gone
	// by a retry after an attempt that may have deleted it (its answer was
	// lost, or was a 5xx): the delete has happened, perhaps by that attempt
	// (see BudgetsService.Delete). The upstream never sends it.
	AlreadyDeleted bool `json:"-"`
}

// BudgetActuals are a budget's actual costs per period: per planning row
// (planning id → period key → amount) and for the whole budget. Decoding
// requires both maps, an object for every planning row and a number for
// every amount: a null is refused, not read as 0.
type BudgetActuals struct {
	ActualsByPlanning      map[string]map[string]float64 `json:"actualsByPlanning"`
	AccountActualsByPeriod map[string]float64            `json:"accountActualsByPeriod"`
}

// BudgetPlanning is a budget's planning grid. Decoding requires plannings.
type BudgetPlanning struct {
	Plannings []Planning `json:"plannings"`
}

// LookbackRequest is the body of budgetLookbackPost. A nil member is left
// out, for the upstream's default; any number set is sent as it is, 0
// included, for the upstream to take or refuse.
type LookbackRequest struct {
	ExplorerReportID string `json:"explorerReportId"`
	StartDate        Date   `json:"startDate"`
	Period           string `json:"period,omitempty"`
	LookbackPeriod   *int   `json:"lookbackPeriod,omitempty"`
	NumberOfPeriods  *int   `json:"numberOfPeriods,omitempty"`
}

// Lookback is the answer of both lookback operations. Decoding requires
// periods, and each period's periodKey and actual.
type Lookback struct {
	Periods []LookbackPeriod `json:"periods"`
}

// LookbackPeriod is one month of a lookback. Projected is sent only by the GET form.
type LookbackPeriod struct {
	PeriodKey string   `json:"periodKey"`
	Actual    float64  `json:"actual"`
	Projected *float64 `json:"projected,omitempty"`
}

// ScheduledNotification is a scheduled notification delivery. Decoding
// requires id, recipientEmail, subject, scheduleType, scheduledAt,
// recurrenceFrequency, recurrenceTimezone, recurrenceWeekday,
// cronExpression, status, createdAt, updatedAt and includeAssistantAnalysis;
// the nullable members may be missing. recurrenceWeekday and
// recurrenceDayOfMonth must fit in 32 bits (GraphQL's Int).
type ScheduledNotification struct {
	ID                       string     `json:"id"`
	RecipientEmail           string     `json:"recipientEmail"`
	Subject                  string     `json:"subject"`
	ScheduleType             string     `json:"scheduleType"`
	ScheduledAt              Timestamp  `json:"scheduledAt"`
	RecurrenceFrequency      string     `json:"recurrenceFrequency"`
	RecurrenceTimezone       string     `json:"recurrenceTimezone"`
	RecurrenceWeekday        int        `json:"recurrenceWeekday"`
	RecurrenceDayOfMonth     *int       `json:"recurrenceDayOfMonth"`
	CronExpression           string     `json:"cronExpression"`
	Status                   string     `json:"status"`
	SentAt                   *Timestamp `json:"sentAt"`
	ErrorMessage             *string    `json:"errorMessage"`
	NextAttemptAt            *Timestamp `json:"nextAttemptAt"`
	CreatedAt                Timestamp  `json:"createdAt"`
	UpdatedAt                Timestamp  `json:"updatedAt"`
	CanvasID                 *string    `json:"canvasId"`
	ExplorerReportID         *string    `json:"explorerReportId"`
	IncludeAssistantAnalysis bool       `json:"includeAssistantAnalysis"`
}

// ExplorerQuery is the body of the four POST Explorer operations. The
// contract leaves the values of GroupBy, CostType and Granularity open, so
// they are sent as given: the values it shows are "product_product_name",
// "line_item_unblended_cost" and "day".
type ExplorerQuery struct {
	DateRange   DateRange `json:"dateRange"`
	GroupBy     string    `json:"groupBy"`
	CostType    string    `json:"costType"`
	Granularity string    `json:"granularity"`
	// Filters are sent as given; the contract does not give their shape.
	// A nil slice is sent as [], which the contract allows ("may be empty").
	Filters []json.RawMessage `json:"filters"`
}

// MarshalJSON sends nil Filters as [] rather than null.
func (q ExplorerQuery) MarshalJSON() ([]byte, error) {
	type plain ExplorerQuery
	if q.Filters == nil {
		q.Filters = []json.RawMessage{}
	}
	return json.Marshal(plain(q))
}

// DateRange is an inclusive range of dates.
type DateRange struct {
	Start Date `json:"start"`
	End   Date `json:"end"`
}

// ExplorerSummary is the answer of explorerSummary. Decoding requires every
// member, and every member of each card.
type ExplorerSummary struct {
	Cards           []SummaryCard `json:"cards"`
	ServedFromCache bool          `json:"servedFromCache"`
}

// SummaryCard is one card of an Explorer summary.
type SummaryCard struct {
	Title         string  `json:"title"`
	Description   string  `json:"description"`
	Value         float64 `json:"value"`
	PreviousValue float64 `json:"previousValue"`
}

// ExplorerPreviousPeriod is the answer of explorerPreviousPeriod. Decoding
// requires every member.
type ExplorerPreviousPeriod struct {
	CurrentTotal    float64 `json:"currentTotal"`
	PreviousTotal   float64 `json:"previousTotal"`
	ChangePercent   float64 `json:"changePercent"`
	ServedFromCache bool    `json:"servedFromCache"`
}

// ExplorerHistory is the answer of explorerHistory; decoding requires every
// member (the columns of a row are read by HistoryRow). Its rows have dynamic
// columns named by GroupBy and TimeColumn.
type ExplorerHistory struct {
	CostRows         []HistoryRow      `json:"costRows"`
	TotalsByTimeRows []json.RawMessage `json:"totalsByTimeRows"`
	UsageRows        []json.RawMessage `json:"usageRows"`
	UsageGroupRows   []json.RawMessage `json:"usageGroupRows"`
	TimeColumn       string            `json:"timeColumn"`
	GroupBy          string            `json:"groupBy"`
	ServedFromCache  bool              `json:"servedFromCache"`
}

// HistoryRow is one cost row of an Explorer history: every column, in the
// order the answer gave them. A row's columns are a slice, not a map: a
// history has thousands of rows of three columns each, which a map apiece
// made the largest part of decoding one (docs/performance.md).
type HistoryRow []HistoryColumn

// HistoryColumn is one column of a history row, its value as raw JSON.
type HistoryColumn struct {
	Name  string
	Value json.RawMessage
}

// Column returns the value of column col. Of a name given twice, the last
// value counts, as it does in a JSON object decoded into a map.
func (r HistoryRow) Column(col string) (json.RawMessage, bool) {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i].Name == col {
			return r[i].Value, true
		}
	}
	return nil, false
}

// MarshalJSON writes the row as a JSON object: each name once, with the
// value Column gives it, names in sorted order.
func (r HistoryRow) MarshalJSON() ([]byte, error) {
	m := make(map[string]json.RawMessage, len(r))
	for _, c := range r {
		m[c.Name] = c.Value
	}
	return json.Marshal(m)
}

// String returns the text in column col, and whether it is a string.
func (r HistoryRow) String(col string) (string, bool) {
	v, _ := r.Column(col)
	return jsonString(v)
}

// jsonString returns the text v holds, and whether v is a JSON string.
func jsonString(v json.RawMessage) (string, bool) {
	// Most strings of an answer hold no escape: their text is the string,
	// without a decoder (a history's group-by column, thousands a page).
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		if in := v[1 : len(v)-1]; plainJSONText(in) {
			return string(in), true
		}
	}
	var s *string // JSON null decodes into a string without error; it is not one
	if json.Unmarshal(v, &s) != nil || s == nil {
		return "", false
	}
	return *s, true
}

// plainJSONText reports whether b, between a JSON string's quotes, is the
// string itself: valid UTF-8 with no escape, quote or control character,
// which a decoder would read as it is.
func plainJSONText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(b)
}

// Group reads column col as a group-by value. The contract types only a
// row's cost and time column, and a dimension's values are not all text: an
// account id may come as the number 123456789012, which Group returns as
// its JSON text, exactly as sent (no float64 rounds it), and costs that no
// value of the dimension covers may come as null, which Group returns as
// nil. ok is false when the column is missing or holds a boolean, an array
// or an object.
func (r HistoryRow) Group(col string) (value *string, ok bool) {
	v, found := r.Column(col)
	if !found {
		return nil, false
	}
	v = bytes.TrimSpace(v)
	switch {
	case string(v) == "null":
		return nil, true
	case len(v) > 0 && (v[0] == '-' || '0' <= v[0] && v[0] <= '9') && json.Valid(v):
		s := string(v)
		return &s, true
	}
	s, ok := jsonString(v)
	if !ok {
		return nil, false
	}
	return &s, true
}

// Number returns the number in column col, and whether it is a number.
func (r HistoryRow) Number(col string) (float64, bool) {
	v, ok := r.Column(col)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// Date reads column col as the contract's numeric YYYYMMDD date: a JSON
// number read by its value, however it is written (20260531, 20260531.0,
// 2.0260531e7), as every integer of an answer is (readInt).
func (r HistoryRow) Date(col string) (Date, error) {
	v, ok := r.Column(col)
	if !ok {
		return Date{}, fmt.Errorf("history row has no column %q", col)
	}
	n, err := strconv.ParseInt(string(v), 10, 64) // the form answers have
	integral := err == nil
	if !integral && len(v) > 0 && (v[0] == '-' || '0' <= v[0] && v[0] <= '9') && json.Valid(v) { // a JSON number
		n, integral, ok = intValue(v)
	}
	if !integral || !ok || n < 10000101 || n > 99991231 {
		return Date{}, fmt.Errorf("history column %q is %s, not a YYYYMMDD number", col, v)
	}
	y, m, d := int(n/10000), time.Month(n/100%100), int(n%100)
	if t := time.Date(y, m, d, 0, 0, 0, 0, time.UTC); t.Year() != y || t.Month() != m || t.Day() != d {
		return Date{}, fmt.Errorf("history column %q is %s, not a valid YYYYMMDD date", col, v)
	}
	return Date{y, m, d}, nil
}

// ExplorerHeatmap is the answer of explorerHeatmap. Decoding requires every
// member, and every member of each row.
type ExplorerHeatmap struct {
	Rows            []HeatmapRow `json:"rows"`
	ServedFromCache bool         `json:"servedFromCache"`
}

// HeatmapRow is the cost of one dimension value on one day.
type HeatmapRow struct {
	Dimension string  `json:"dimension"`
	Day       Date    `json:"day"`
	Cost      float64 `json:"cost"`
}

// DimensionValues is the answer of explorerDimensionValues. Decoding
// requires every member, and every member of each item.
type DimensionValues struct {
	Items           []DimensionValue `json:"items"`
	Values          []string         `json:"values"`
	HasMore         bool             `json:"hasMore"`
	ServedFromCache bool             `json:"servedFromCache"`
}

// DimensionValue is one value of a dimension with its cost.
type DimensionValue struct {
	Value string  `json:"value"`
	Cost  float64 `json:"cost"`
}
