// Package ops names the operations of the Cost Management REST API by the
// ids its contract's operation table gives them. The client (package
// upstream) and the simulator (package sim) both use these names, in
// errors, observers, log lines, request counters and fault injection, so
// that dashboards and tests can too; neither imports the other.
package ops

const (
	// ListRecommendations is GET /v1/recommendations.
	ListRecommendations = "listRecommendations"
	// ListAnomalies is GET /v1/anomalies.
	ListAnomalies = "listAnomalies"
	// ExplorerSummary is POST /v1/explorer/summary.
	ExplorerSummary = "explorerSummary"
	// ExplorerPreviousPeriod is POST /v1/explorer/previous-period.
	ExplorerPreviousPeriod = "explorerPreviousPeriod"
	// ExplorerHistory is POST /v1/explorer/history.
	ExplorerHistory = "explorerHistory"
	// ExplorerHeatmap is POST /v1/explorer/heatmap.
	ExplorerHeatmap = "explorerHeatmap"
	// ExplorerDimensionValues is GET /v1/explorer/dimensions/{key}/values.
	ExplorerDimensionValues = "explorerDimensionValues"
	// ListBudgets is GET /v1/budgets.
	ListBudgets = "listBudgets"
	// CreateBudget is POST /v1/budgets.
	CreateBudget = "createBudget"
	// BudgetLookbackGet is GET /v1/budgets/lookback.
	BudgetLookbackGet = "budgetLookbackGet"
	// BudgetLookbackPost is POST /v1/budgets/lookback.
	BudgetLookbackPost = "budgetLookbackPost"
	// GetBudget is GET /v1/budgets/{id}.
	GetBudget = "getBudget"
	// UpdateBudget is PATCH /v1/budgets/{id}.
	UpdateBudget = "updateBudget"
	// DeleteBudget is DELETE /v1/budgets/{id}.
	DeleteBudget = "deleteBudget"
	// GetBudgetActuals is GET /v1/budgets/{id}/actuals.
	GetBudgetActuals = "getBudgetActuals"
	// GetBudgetPlanning is GET /v1/budgets/{id}/planning.
	GetBudgetPlanning = "getBudgetPlanning"
	// ListScheduledNotifications is GET /v1/notifications/scheduled. The
	// contract names no operation id for it; this one follows the others.
	ListScheduledNotifications = "listScheduledNotifications"
)
