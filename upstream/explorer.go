package upstream

import (
	"context"

	"github.com/costgw/gateway/upstream/ops"
)

// ExplorerService calls the Explorer operations.
type ExplorerService struct{ c *Client }

// explore sends a POST Explorer query; it reads only, so it may be retried.
func explore[T any](ctx context.Context, c *Client, op, path string, q *ExplorerQuery) (*T, error) {
	v, _, err := do[T](ctx, c, call{op: op, method: "POST", route: path, path: path, body: q, safe: true})
	return v, err
}

// Summary calls explorerSummary: POST /v1/explorer/summary.
func (s *ExplorerService) Summary(ctx context.Context, q *ExplorerQuery) (*ExplorerSummary, error) {
	return explore[ExplorerSummary](ctx, s.c, ops.ExplorerSummary, "/v1/explorer/summary", q)
}

// PreviousPeriod calls explorerPreviousPeriod: POST /v1/explorer/previous-period.
func (s *ExplorerService) PreviousPeriod(ctx context.Context, q *ExplorerQuery) (*ExplorerPreviousPeriod, error) {
	return explore[ExplorerPreviousPeriod](ctx, s.c, ops.ExplorerPreviousPeriod, "/v1/explorer/previous-period", q)
}

// History calls explorerHistory: POST /v1/explorer/history.
func (s *ExplorerService) History(ctx context.Context, q *ExplorerQuery) (*ExplorerHistory, error) {
	return explore[ExplorerHistory](ctx, s.c, ops.ExplorerHistory, "/v1/explorer/history", q)
}

// Heatmap calls explorerHeatmap: POST /v1/explorer/heatmap.
func (s *ExplorerService) Heatmap(ctx context.Context, q *ExplorerQuery) (*ExplorerHeatmap, error) {
	return explore[ExplorerHeatmap](ctx, s.c, ops.ExplorerHeatmap, "/v1/explorer/heatmap", q)
}

// DimensionValues calls explorerDimensionValues: GET /v1/explorer/dimensions/{key}/values.
func (s *ExplorerService) DimensionValues(ctx context.Context, key string) (*DimensionValues, error) {
	const op = ops.ExplorerDimensionValues
	k, err := pathID(op, key)
	if err != nil {
		return nil, err
	}
	v, _, err := do[DimensionValues](ctx, s.c, call{op: op, method: "GET", route: "/v1/explorer/dimensions/{key}/values", path: "/v1/explorer/dimensions/" + k + "/values", safe: true})
	return v, err
}
