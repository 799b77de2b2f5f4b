package upstream

import (
	"context"
	"errors"
	"iter"
	"net/http"

	"github.com/costgw/gateway/upstream/ops"
)

// BudgetsService calls the Budgets operations.
type BudgetsService struct{ c *Client }

// WriteOptions are the options of a budget write.
type WriteOptions struct {
	// IdempotencyKey is sent as the Idempotency-Key header: 1 to 64
	// printable ASCII characters (0x21–0x7E, and spaces between them).
	// Any other key refuses the write before sending, with an *Error
	// matching ErrInvalidRequest. When empty, the client makes one; either
	// way the same key is reused on the client's own retries, so a retried
	// write applies once.
	IdempotencyKey string
}

// idempotencyKey returns the key a write is sent with.
func (s *BudgetsService) idempotencyKey(op string, opts *WriteOptions) (string, error) {
	if opts == nil || opts.IdempotencyKey == "" {
		return s.c.newKey(), nil
	}
	if why := checkIdempotencyKey(opts.IdempotencyKey); why != "" {
		return "", refuse(op, why)
	}
	return opts.IdempotencyKey, nil
}

// List calls listBudgets: GET /v1/budgets.
func (s *BudgetsService) List(ctx context.Context, opts *ListOptions) (*Page[Budget], error) {
	return list[Budget](ctx, s.c, ops.ListBudgets, "/v1/budgets", opts)
}

// All walks every page of listBudgets.
func (s *BudgetsService) All(ctx context.Context, pageSize int) iter.Seq2[Budget, error] {
	return all(ctx, ops.ListBudgets, pageSize, s.List)
}

// Create calls createBudget: POST /v1/budgets, with an Idempotency-Key.
func (s *BudgetsService) Create(ctx context.Context, in *BudgetCreate, opts *WriteOptions) (*Budget, error) {
	const op = ops.CreateBudget
	key, err := s.idempotencyKey(op, opts)
	if err != nil {
		return nil, err
	}
	return s.write(ctx, "", call{op: op, method: "POST", route: "/v1/budgets", path: "/v1/budgets", body: in, idempotencyKey: key})
}

// write sends a create or update (of budget id, "" for a create) and tells
// the cache: of the write, when it applied or may have, and of the
// organization it answers for.
func (s *BudgetsService) write(ctx context.Context, id string, cl call) (*Budget, error) {
	r, st, err := fetch[budgetResult](ctx, s.c, cl, nil)
	if err != nil {
		if st.mayHaveApplied {
			s.c.cache.written(ctx, id, "")
		}
		return nil, err
	}
	b := r.Data.Budget
	s.c.cache.learnOrg(ctx, b.OrganizationID)
	s.c.cache.written(ctx, id, b.OrganizationID)
	return &b, nil
}

// Get calls getBudget: GET /v1/budgets/{id}. The answer adds metrics and dimensions.
func (s *BudgetsService) Get(ctx context.Context, id string) (*BudgetDetail, error) {
	w, err := readOf[budgetDetailWire](ctx, s.c, ops.GetBudget, "/v1/budgets/{id}", id, "")
	if err != nil {
		return nil, err
	}
	return &w.BudgetDetail, nil
}

// Update calls updateBudget: PATCH /v1/budgets/{id}, with an Idempotency-Key.
// Only the fields set in the update are sent.
func (s *BudgetsService) Update(ctx context.Context, id string, in *BudgetUpdate, opts *WriteOptions) (*Budget, error) {
	const op = ops.UpdateBudget
	p, err := pathID(op, id)
	if err != nil {
		return nil, err
	}
	key, err := s.idempotencyKey(op, opts)
	if err != nil {
		return nil, err
	}
	return s.write(ctx, id, call{op: op, method: "PATCH", route: "/v1/budgets/{id}", path: "/v1/budgets/" + p, body: in, idempotencyKey: key})
}

// Delete calls deleteBudget: DELETE /v1/budgets/{id}.
//
// A delete is idempotent: once it has happened, the budget is gone however
// often it is sent. So Delete retries like a read. Only the answer of a
// repeat differs: a 404, for the budget the first attempt removed. It is
// read by its status, whatever its code (the contract publishes none).
// When a retry answers 404 after an earlier attempt that may have
// deleted it (one that was sent and got no answer, or got a 5xx: a proxy's
// 502 or 504 may come after the upstream committed), Delete reports a
// delete that happened, with AlreadyDeleted set, rather than a failure.
// That reading cannot tell a budget the earlier attempt removed from one
// that never existed; either way the budget does not exist, which is what
// a delete promises. A 404 with no such attempt before it (none, a 429, a
// connection never made) is ErrNotFound, as for any read.
func (s *BudgetsService) Delete(ctx context.Context, id string) (*DeleteResult, error) {
	const op = ops.DeleteBudget
	p, err := pathID(op, id)
	if err != nil {
		return nil, err
	}
	var env *envelope[DeleteResult]
	st, err := s.c.run(ctx, call{op: op, method: "DELETE", route: "/v1/budgets/{id}", path: "/v1/budgets/" + p, idempotent: true}, nil,
		func() answerEnvelope { env = new(envelope[DeleteResult]); return env })
	if err == nil || st.mayHaveApplied {
		s.c.cache.written(ctx, id, "")
	}
	var ue *Error
	if st.mayHaveApplied && errors.As(err, &ue) && ue.Status == http.StatusNotFound {
		return &DeleteResult{Success: true, AlreadyDeleted: true}, nil
	}
	if err != nil {
		return nil, err
	}
	return env.Data, nil
}

// Actuals calls getBudgetActuals: GET /v1/budgets/{id}/actuals.
func (s *BudgetsService) Actuals(ctx context.Context, id string) (*BudgetActuals, error) {
	return readOf[BudgetActuals](ctx, s.c, ops.GetBudgetActuals, "/v1/budgets/{id}/actuals", id, "/actuals")
}

// Planning calls getBudgetPlanning: GET /v1/budgets/{id}/planning.
func (s *BudgetsService) Planning(ctx context.Context, id string) (*BudgetPlanning, error) {
	return readOf[BudgetPlanning](ctx, s.c, ops.GetBudgetPlanning, "/v1/budgets/{id}/planning", id, "/planning")
}

// readOf reads what op, GET route, answers of budget id: GET
// /v1/budgets/{id} and sub.
func readOf[T any](ctx context.Context, c *Client, op, route, id, sub string) (*T, error) {
	p, err := pathID(op, id)
	if err != nil {
		return nil, err
	}
	v, _, err := do[T](ctx, c, call{op: op, method: "GET", route: route, path: "/v1/budgets/" + p + sub, safe: true, id: id})
	return v, err
}

// LookbackPreview calls budgetLookbackGet: GET /v1/budgets/lookback. Its
// periods carry Projected.
func (s *BudgetsService) LookbackPreview(ctx context.Context) (*Lookback, error) {
	v, _, err := do[Lookback](ctx, s.c, call{op: ops.BudgetLookbackGet, method: "GET", route: "/v1/budgets/lookback", path: "/v1/budgets/lookback", safe: true})
	return v, err
}

// Lookback calls budgetLookbackPost: POST /v1/budgets/lookback. It only
// reads, so it may be retried.
func (s *BudgetsService) Lookback(ctx context.Context, in *LookbackRequest) (*Lookback, error) {
	v, _, err := do[Lookback](ctx, s.c, call{op: ops.BudgetLookbackPost, method: "POST", route: "/v1/budgets/lookback", path: "/v1/budgets/lookback", body: in, safe: true})
	return v, err
}
