// explorerQuery is the ExplorerQueryInput that the run-time tests and
// scripts/defer.mjs send: October 2026 by service, day by day, which the
// simulator has data for.
export const explorerQuery = {
  dateRange: { start: "2026-10-01", end: "2026-10-31" },
  groupBy: "product_product_name",
  costType: "line_item_unblended_cost",
  granularity: "day",
  filters: [],
};
