package upstream

// Operation ids, as the contract's operation table names them. Errors
// (Error.Op), the observer (Attempt.Op) and log lines name operations by
// them, so dashboards and tests can too.
const (
	// OpListRecommendations is GET /v1/recommendations.
	OpListRecommendations = "listRecommendations"
	// OpListAnomalies is GET /v1/anomalies.
	OpListAnomalies = "listAnomalies"
	// OpExplorerSummary is POST /v1/explorer/summary.
	OpExplorerSummary = "explorerSummary"
	// OpExplorerPreviousPeriod is POST /v1/explorer/previous-period.
	OpExplorerPreviousPeriod = "explorerPreviousPeriod"
	// OpExplorerHistory is POST /v1/explorer/history.
	OpExplorerHistory = "explorerHistory"
	// OpExplorerHeatmap is POST /v1/explorer/heatmap.
	OpExplorerHeatmap = "explorerHeatmap"
	// OpExplorerDimensionValues is GET /v1/explorer/dimensions/{key}/values.
	OpExplorerDimensionValues = "explorerDimensionValues"
	// OpListBudgets is GET /v1/budgets.
	OpListBudgets = "listBudgets"
	// OpCreateBudget is POST /v1/budgets.
	OpCreateBudget = "createBudget"
	// OpBudgetLookbackGet is GET /v1/budgets/lookback.
	OpBudgetLookbackGet = "budgetLookbackGet"
	// OpBudgetLookbackPost is POST /v1/budgets/lookback.
	OpBudgetLookbackPost = "budgetLookbackPost"
	// OpGetBudget is GET /v1/budgets/{id}.
	OpGetBudget = "getBudget"
	// OpUpdateBudget is PATCH /v1/budgets/{id}.
	OpUpdateBudget = "updateBudget"
	// OpDeleteBudget is DELETE /v1/budgets/{id}.
	OpDeleteBudget = "deleteBudget"
	// OpGetBudgetActuals is GET /v1/budgets/{id}/actuals.
	OpGetBudgetActuals = "getBudgetActuals"
	// OpGetBudgetPlanning is GET /v1/budgets/{id}/planning.
	OpGetBudgetPlanning = "getBudgetPlanning"
	// OpListScheduledNotifications is GET /v1/notifications/scheduled. The
	// contract names no operation id for it; this one follows the others.
	OpListScheduledNotifications = "listScheduledNotifications"
	// OpPing is Client.Ping's keyless GET /v1/budgets; not an operation of
	// the contract.
	OpPing = "ping"
)
