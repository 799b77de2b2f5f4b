package upstream

import (
	"context"

	"github.com/costgw/gateway/upstream/ops"
)

// ExplorerService calls the Explorer operations.
type ExplorerService struct{ c *Client }

// explorerCall is a POST Explorer query; it reads only, so it may be retried.
func explorerCall(op, path string, q *ExplorerQuery) call {
	return call{op: op, method: "POST", route: path, path: path, body: q, safe: true}
}

// Summary calls explorerSummary: POST /v1/explorer/summary.
func (s *ExplorerService) Summary(ctx context.Context, q *ExplorerQuery) (*ExplorerSummary, error) {
	v, _, err := do[ExplorerSummary](ctx, s.c, explorerCall(ops.ExplorerSummary, "/v1/explorer/summary", q))
	return v, err
}

// PreviousPeriod calls explorerPreviousPeriod: POST /v1/explorer/previous-period.
func (s *ExplorerService) PreviousPeriod(ctx context.Context, q *ExplorerQuery) (*ExplorerPreviousPeriod, error) {
	v, _, err := do[ExplorerPreviousPeriod](ctx, s.c, explorerCall(ops.ExplorerPreviousPeriod, "/v1/explorer/previous-period", q))
	return v, err
}

// History calls explorerHistory: POST /v1/explorer/history.
func (s *ExplorerService) History(ctx context.Context, q *ExplorerQuery) (*ExplorerHistory, error) {
	v, _, err := do[ExplorerHistory](ctx, s.c, explorerCall(ops.ExplorerHistory, "/v1/explorer/history", q))
	return v, err
}

// Heatmap calls explorerHeatmap: POST /v1/explorer/heatmap.
func (s *ExplorerService) Heatmap(ctx context.Context, q *ExplorerQuery) (*ExplorerHeatmap, error) {
	v, _, err := do[ExplorerHeatmap](ctx, s.c, explorerCall(ops.ExplorerHeatmap, "/v1/explorer/heatmap", q))
	return v, err
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
