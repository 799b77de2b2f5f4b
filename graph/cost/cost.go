// Package cost is the one table of what each GraphQL field costs in upstream
// calls and which per-budget reads it needs, and the two readers of it: the
// estimate that the limits check before any call (Estimate), and the
// selection reader the resolvers use to start every read a page of budgets
// will need at once (Reads).
//
// Adding a field means a schema line, a resolver and a row here; a test
// walks the schema and fails on any field without a row.
//
// The model, in upstream calls:
//
//   - a connection costs its upstream pages: ceil(first / PageSize), one
//     more when it resumes from a cursor (the resumed page is partly
//     skipped); each of its first elements counts what its selection needs;
//   - a budget (an element of budgets, budget(id), a node, a mutation's
//     budget) adds one call per kind of per-budget read its selection needs,
//     its planning rows' included: each kind is fetched once per budget per
//     request by the loaders, however many fields ask for it;
//   - node(id) costs the refetch of the object plus its reads, the larger of
//     a Budget's and a Planning's when the selection has fragments for both;
//     nodes(ids) that times the number of ids;
//   - each Explorer field, lookback and mutation is one call.
//
// Aliases of one field are counted separately although the loaders may fetch
// them once, and @skip/@include are not looked at, so the estimate is an
// upper bound of what the resolvers send.
package cost

import "github.com/costgw/gateway/upstream"

// Paging of connections.
const (
	// PageSize is the largest upstream page, which the connections ask for.
	PageSize = upstream.MaxPageSize
	// DefaultFirst is a connection's first when the query gives none (the
	// schema declares the same default).
	DefaultFirst = 50
	// MaxFirst is the largest first a connection serves; above PageSize it
	// walks upstream pages.
	MaxFirst = 500
	// MaxNodes bounds the ids of one nodes query.
	MaxNodes = 100
	// MaxScanPages bounds the pages node(id:) reads of a list to find an
	// object the upstream has no single read for: its first 1 000 records,
	// or fewer when the upstream applies a smaller page than asked.
	MaxScanPages = 5
)

// Pages is the number of upstream pages a connection of first records
// fetches at most: resuming from a cursor may skip part of the first page.
func Pages(first int, resumes bool) int {
	if resumes {
		return (first + 2*PageSize - 2) / PageSize
	}
	return (first + PageSize - 1) / PageSize
}

// Read is a set of per-budget upstream reads. The request's loaders make
// each at most once per budget.
type Read uint8

// The per-budget reads.
const (
	// Detail is getBudget: the budget with its metrics and dimensions.
	Detail Read = 1 << iota
	// Actuals is getBudgetActuals: the budget's and its rows' actuals.
	Actuals
	// Planning is getBudgetPlanning: the budget's planning grid.
	Planning
)

// count is the number of reads in r.
func (r Read) count() int {
	n := 0
	for ; r != 0; r &= r - 1 {
		n++
	}
	return n
}

// Field is what resolving a field costs.
type Field struct {
	// Op is the upstream operation id the field calls, if any.
	Op string
	// Calls is how many calls one resolution of the field makes itself.
	Calls int
	// Connection marks a field paged from an upstream list: it takes first
	// and after, costs Pages(first, after != nil) calls, and its selection
	// is counted once per element.
	Connection bool
	// NewBudget marks a field whose objects are each a budget of their own
	// (or, for node, a budget's planning row), rather than the budget the
	// enclosing selection is about: their reads are counted for them.
	NewBudget bool
	// Refetch marks node and nodes, which read their object by its global
	// ID: RefetchOf says what that costs, per object type.
	Refetch bool
	// PerID marks nodes: the selection counts once per id.
	PerID bool
	// Needs is the per-budget read the field needs of its budget.
	Needs Read
	// Uncounted marks a need that the estimate does not count: the
	// contract's budget records carry their planning rows, so the planning
	// grid is read only for a record that came without them.
	Uncounted bool
}

// Refetch is what node(id:) costs to refetch an object of one type.
type Refetch struct {
	// Read is the per-budget read that refetches it.
	Read Read
	// Scan is the list it is found in, read up to MaxScanPages pages once
	// per request however many ids of it are asked for; "" for none.
	Scan string
}

// RefetchOf is what node(id:) costs per object type: a budget is its
// single-budget read; a planning row is found in its budget's planning
// grid; what the upstream can only list is found in its list (users and
// Explorer reports in the budgets that embed them).
var RefetchOf = map[string]Refetch{
	"Budget":                {Read: Detail},
	"Planning":              {Read: Planning},
	"Recommendation":        {Scan: "listRecommendations"},
	"Anomaly":               {Scan: "listAnomalies"},
	"ScheduledNotification": {Scan: "listScheduledNotifications"},
	"User":                  {Scan: "listBudgets"},
	"ExplorerReport":        {Scan: "listBudgets"},
}

// fields is the table, keyed by "Type.field". Fields of the introspection
// types and __typename cost nothing and have no row.
var fields = withFree(map[string]Field{
	"Query.budgets":                {Op: "listBudgets", Connection: true, NewBudget: true},
	"Query.budget":                 {Op: "getBudget", NewBudget: true, Needs: Detail},
	"Query.budgetLookback":         {Op: "budgetLookbackPost", Calls: 1},
	"Query.budgetLookbackPreview":  {Op: "budgetLookbackGet", Calls: 1},
	"Query.recommendations":        {Op: "listRecommendations", Connection: true},
	"Query.anomalies":              {Op: "listAnomalies", Connection: true},
	"Query.scheduledNotifications": {Op: "listScheduledNotifications", Connection: true},
	"Query.explorer":               {},
	"Query.node":                   {NewBudget: true, Refetch: true},
	"Query.nodes":                  {NewBudget: true, Refetch: true, PerID: true},
	"Query.cost":                   {},

	"Mutation.createBudget":      {Op: "createBudget", Calls: 1},
	"Mutation.updateBudget":      {Op: "updateBudget", Calls: 1},
	"Mutation.deleteBudget":      {Op: "deleteBudget", Calls: 1},
	"CreateBudgetPayload.budget": {NewBudget: true},
	"UpdateBudgetPayload.budget": {NewBudget: true},

	"Explorer.summary":         {Op: "explorerSummary", Calls: 1},
	"Explorer.previousPeriod":  {Op: "explorerPreviousPeriod", Calls: 1},
	"Explorer.history":         {Op: "explorerHistory", Calls: 1},
	"Explorer.heatmap":         {Op: "explorerHeatmap", Calls: 1},
	"Explorer.dimensionValues": {Op: "explorerDimensionValues", Calls: 1},

	"Budget.metrics":    {Op: "getBudget", Needs: Detail},
	"Budget.dimensions": {Op: "getBudget", Needs: Detail},
	"Budget.actuals":    {Op: "getBudgetActuals", Needs: Actuals},
	"Budget.plannings":  {Op: "getBudgetPlanning", Needs: Planning, Uncounted: true},
	"Planning.budget":   {Op: "getBudget", Needs: Detail},
	"Planning.actuals":  {Op: "getBudgetActuals", Needs: Actuals},
}, freeFields)

// freeFields lists, per type, the fields that read what their object
// already holds.
var freeFields = map[string][]string{
	"Budget": {"id", "upstreamId", "name", "targetType", "targetTypeRaw", "period", "periodRaw", "status", "statusRaw",
		"numberOfPeriods", "startDate", "endDate",
		"lookbackPeriod", "budgetType", "startingValue", "customStartingValue", "growthRate", "normalizationPeriod",
		"organizationId", "serviceClientId", "creatorId", "explorerReportId", "createdAt", "updatedAt", "explorerReport",
		"creator"},
	"Planning": {"id", "upstreamId", "budgetId", "dimension1", "dimension2", "previousMonth", "avgLookback",
		"percentGrowth", "percentSpend", "targetItems", "targetType", "targetTypeRaw", "createdAt"},
	"BudgetConnection":                {"edges", "nodes", "pageInfo"},
	"BudgetEdge":                      {"cursor", "node"},
	"RecommendationConnection":        {"edges", "nodes", "pageInfo"},
	"RecommendationEdge":              {"cursor", "node"},
	"AnomalyConnection":               {"edges", "nodes", "pageInfo"},
	"AnomalyEdge":                     {"cursor", "node"},
	"ScheduledNotificationConnection": {"edges", "nodes", "pageInfo", "totalCount"},
	"ScheduledNotificationEdge":       {"cursor", "node"},
	"PageInfo":                        {"hasNextPage", "hasPreviousPage", "startCursor", "endCursor"},
	"BudgetActuals":                   {"byPeriod", "byPlanning", "total"},
	"PlanningActuals":                 {"planningId", "periods"},
	"PeriodAmount":                    {"period", "amount"},
	"TargetItem":                      {"dimensionValue", "amount"},
	"BudgetMetrics":                   {"totalTarget", "totalActual", "variance"},
	"ExplorerReport":                  {"id", "upstreamId", "name"},
	"User":                            {"id", "upstreamId", "firstName", "lastName", "email"},
	"BudgetLookback":                  {"periods"},
	"LookbackPeriod":                  {"periodKey", "actual", "projected"},
	"CreateBudgetPayload":             {"userErrors", "idempotencyKey"},
	"UpdateBudgetPayload":             {"userErrors", "idempotencyKey"},
	"DeleteBudgetPayload":             {"deletedBudgetId", "success", "alreadyDeleted", "userErrors"},
	"UserError":                       {"field", "message", "code", "upstreamCode"},
	"QueryCost":                       {"estimatedUpstreamCalls", "maxUpstreamCalls"},
	"Recommendation": {"id", "recommendationId", "recommendationName", "estimatedMonthlySavings", "implementationEffort",
		"implementationEffortRaw", "category", "actionType", "accountName", "region", "resourceId", "extra"},
	"Anomaly": {"id", "anomalyId", "service", "startDate", "endDate", "scoreCurrent", "scoreMax", "impactMax",
		"impactTotal", "impactPct", "impactActualSpend", "impactExpectedSpend", "dimensionValue", "detectionSource",
		"detectionSourceRaw", "extra"},
	"ScheduledNotification": {"id", "upstreamId", "recipientEmail", "subject", "scheduleType", "scheduleTypeRaw",
		"scheduledAt", "recurrenceFrequency", "recurrenceFrequencyRaw", "recurrenceTimezone", "recurrenceWeekday",
		"recurrenceDayOfMonth", "cronExpression", "status", "statusRaw", "sentAt", "errorMessage", "nextAttemptAt",
		"createdAt", "updatedAt", "canvasId", "explorerReportId", "includeAssistantAnalysis"},
	"ExplorerSummary":        {"cards", "servedFromCache"},
	"SummaryCard":            {"title", "description", "value", "previousValue"},
	"ExplorerPreviousPeriod": {"currentTotal", "previousTotal", "changePercent", "servedFromCache"},
	"ExplorerHistory":        {"costRows", "totalsByTimeRows", "usageRows", "usageGroupRows", "timeColumn", "groupBy", "servedFromCache"},
	"HistoryCostRow":         {"group", "date", "cost", "raw"},
	"ExplorerHeatmap":        {"rows", "servedFromCache"},
	"HeatmapRow":             {"dimension", "day", "cost"},
	"DimensionValues":        {"items", "values", "hasMore", "servedFromCache"},
	"DimensionValue":         {"value", "cost"},
	"Node":                   {"id"},
}

// withFree adds the free fields to the rows of the fields that cost.
func withFree(rows map[string]Field, free map[string][]string) map[string]Field {
	for typ, names := range free {
		for _, n := range names {
			rows[typ+"."+n] = Field{}
		}
	}
	return rows
}

// Of returns the row of the field name of type typ, and whether it has one.
func Of(typ, name string) (Field, bool) {
	f, ok := fields[typ+"."+name]
	return f, ok
}

// Fields returns every "Type.field" of the table, for the test that holds
// it to the schema and for the documentation.
func Fields() map[string]Field {
	out := make(map[string]Field, len(fields))
	for k, v := range fields {
		out[k] = v
	}
	return out
}
