package resolvers

import (
	"context"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/google/uuid"

	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/graph/model"
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream"
)

// userErrors collects the input problems of one mutation.
type userErrors []model.UserError

func (u *userErrors) add(code model.UserErrorCode, msg string, field ...string) {
	*u = append(*u, model.UserError{Field: append([]string{"input"}, field...), Message: msg, Code: code})
}

// open is openValue with its refusal a user error of the …Raw field.
func (u *userErrors) open(known, raw *string, field string) *string {
	v, err := openValue(known, raw, field)
	if err != nil {
		u.add(model.UserErrorCodeInvalidValue, err.Error(), field+"Raw")
	}
	return v
}

// idempotencyKey returns the caller's key, or a new one for this mutation
// field. The client sends it on every retry of the write, so a retried write
// applies once; the payload returns it so the caller can retry too. A key
// is what the client sends unchanged as a header (upstream.CheckIdempotencyKey).
func idempotencyKey(in graphql.Omittable[*string], ue *userErrors) string {
	v := in.Value()
	if v == nil {
		return uuid.NewString()
	}
	// An empty key is refused, not taken for one left out: a client that
	// retries with "" would get a new key, and a second write, each time.
	if *v == "" {
		ue.add(model.UserErrorCodeInvalidValue, "idempotencyKey is empty: send 1 to 64 characters, or leave it out for the gateway to make one", "idempotencyKey")
	} else if utf8.RuneCountInString(*v) > upstream.MaxIdempotencyKeyLen {
		ue.add(model.UserErrorCodeTooLong, "idempotencyKey must be at most 64 characters", "idempotencyKey")
	} else if err := upstream.CheckIdempotencyKey(*v); err != nil {
		ue.add(model.UserErrorCodeInvalidValue, "idempotencyKey must be printable ASCII, with spaces only between characters: "+err.Error(), "idempotencyKey")
	}
	return *v
}

// rejected reports whether err is the upstream refusing the write because
// of its input (an invalid value, an unknown budget, a reused key, a key
// without the scope), which a payload reports as a user error rather than a
// GraphQL error. id names the input field of the budget written, if any.
func rejected(err error, ue *userErrors, id bool) bool {
	var e *upstream.Error
	if !errors.As(err, &e) {
		return false
	}
	var code model.UserErrorCode
	field := []string{"input"}
	switch {
	case errors.Is(err, upstream.ErrInvalidRequest):
		code = model.UserErrorCodeInvalidValue
	case errors.Is(err, upstream.ErrNotFound):
		code = model.UserErrorCodeNotFound
		if id {
			field = append(field, "id")
		}
	case errors.Is(err, upstream.ErrConflict):
		code, field = model.UserErrorCodeConflict, append(field, "idempotencyKey")
	case errors.Is(err, upstream.ErrForbidden):
		code = model.UserErrorCodeForbidden
	default:
		return false
	}
	upstreamCode := e.Code
	*ue = append(*ue, model.UserError{Field: field, Message: e.Message, Code: code, UpstreamCode: &upstreamCode})
	return true
}

// raw returns the JSON of an optional JSON input, with an explicit null kept
// as the literal null (so an update can clear the field).
func raw(in graphql.Omittable[json.RawMessage]) json.RawMessage {
	if !in.IsSet() {
		return nil
	}
	if v := in.Value(); len(v) > 0 {
		return v
	}
	return json.RawMessage("null")
}

func (r mutationResolver) createBudget(ctx context.Context, in model.CreateBudgetInput) (*model.CreateBudgetPayload, error) {
	var ue userErrors
	key := idempotencyKey(in.IdempotencyKey, &ue)
	checkBudgetFields(&in.Name, &in.NumberOfPeriods, &in.ExplorerReportID, &ue)
	body := &upstream.BudgetCreate{
		Name:                in.Name,
		NumberOfPeriods:     in.NumberOfPeriods,
		StartDate:           in.StartDate,
		ExplorerReportID:    in.ExplorerReportID,
		LookbackPeriod:      in.LookbackPeriod.Value(),
		NormalizationPeriod: in.NormalizationPeriod.Value(),
		BudgetType:          raw(in.BudgetType),
		StartingValue:       raw(in.StartingValue),
		CustomStartingValue: raw(in.CustomStartingValue),
		GrowthRate:          raw(in.GrowthRate),
	}
	if v := ue.open(in.Period.Value(), in.PeriodRaw.Value(), "period"); v != nil {
		body.Period = *v
	}
	if v := ue.open(in.Status.Value(), in.StatusRaw.Value(), "status"); v != nil {
		body.Status = *v
	}
	if v := ue.open(in.TargetType.Value(), in.TargetTypeRaw.Value(), "targetType"); v != nil {
		body.TargetType = *v
	}
	b, uerrs, err := write(ctx, "", ue, func() (*upstream.Budget, error) {
		return r.Client.Budgets.Create(ctx, body, &upstream.WriteOptions{IdempotencyKey: key})
	})
	if err != nil {
		return nil, err
	}
	return &model.CreateBudgetPayload{Budget: b, UserErrors: uerrs, IdempotencyKey: key}, nil
}

// write sends a budget write unless the input already has user errors, and
// sorts the outcome into the written budget, the user errors of an input the
// upstream rejected, or an error. What the request's loaders hold of the
// budget (changed, if an id is given) is replaced by the answer.
func write(ctx context.Context, changed string, ue userErrors, send func() (*upstream.Budget, error)) (*upstream.Budget, []model.UserError, error) {
	if len(ue) > 0 {
		return nil, ue, nil
	}
	b, err := send()
	if rejected(err, &ue, changed != "") {
		return nil, ue, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if l := loaders.For(ctx); l != nil {
		if changed != "" {
			l.Forget(ctx, changed)
		}
		l.PrimePlannings(ctx, b)
	}
	return b, []model.UserError{}, nil
}

func (r mutationResolver) updateBudget(ctx context.Context, in model.UpdateBudgetInput) (*model.UpdateBudgetPayload, error) {
	id, err := parseID(in.ID, relay.TypeBudget)
	if err != nil {
		return nil, err
	}
	var ue userErrors
	key := idempotencyKey(in.IdempotencyKey, &ue)
	body := &upstream.BudgetUpdate{
		Name:                required(in.Name, "name", &ue),
		Status:              ue.open(required(in.Status, "status", &ue), required(in.StatusRaw, "statusRaw", &ue), "status"),
		Period:              ue.open(required(in.Period, "period", &ue), required(in.PeriodRaw, "periodRaw", &ue), "period"),
		NumberOfPeriods:     required(in.NumberOfPeriods, "numberOfPeriods", &ue),
		StartDate:           required(in.StartDate, "startDate", &ue),
		ExplorerReportID:    required(in.ExplorerReportID, "explorerReportId", &ue),
		TargetType:          ue.open(required(in.TargetType, "targetType", &ue), required(in.TargetTypeRaw, "targetTypeRaw", &ue), "targetType"),
		NormalizationPeriod: required(in.NormalizationPeriod, "normalizationPeriod", &ue),
		BudgetType:          raw(in.BudgetType),
		StartingValue:       raw(in.StartingValue),
		CustomStartingValue: raw(in.CustomStartingValue),
		GrowthRate:          raw(in.GrowthRate),
	}
	checkBudgetFields(body.Name, body.NumberOfPeriods, body.ExplorerReportID, &ue)
	if in.LookbackPeriod.IsSet() {
		if v := in.LookbackPeriod.Value(); v != nil {
			body.LookbackPeriod = upstream.Set(*v)
		} else {
			body.LookbackPeriod = upstream.Null[int]()
		}
	}
	b, uerrs, err := write(ctx, id.BudgetID, ue, func() (*upstream.Budget, error) {
		return r.Client.Budgets.Update(ctx, id.BudgetID, body, &upstream.WriteOptions{IdempotencyKey: key})
	})
	if err != nil {
		return nil, err
	}
	return &model.UpdateBudgetPayload{Budget: b, UserErrors: uerrs, IdempotencyKey: key}, nil
}

// checkBudgetFields adds the user errors of the fields a create and an
// update share, those given (nil: left out of an update), so that both
// report them alike, beside the field: an update's empty name was the
// upstream's refusal of the whole input.
func checkBudgetFields(name *string, numberOfPeriods *int, explorerReportID *string, ue *userErrors) {
	if name != nil && *name == "" {
		ue.add(model.UserErrorCodeRequired, "name must not be empty", "name")
	}
	if numberOfPeriods != nil && *numberOfPeriods < 1 {
		ue.add(model.UserErrorCodeInvalidValue, "numberOfPeriods must be at least 1", "numberOfPeriods")
	}
	if explorerReportID != nil && *explorerReportID == "" {
		ue.add(model.UserErrorCodeRequired, "explorerReportId must not be empty", "explorerReportId")
	}
}

// required returns an optional input that the upstream does not allow to be
// null: left out stays out, null is a user error.
func required[T any](in graphql.Omittable[*T], field string, ue *userErrors) *T {
	if in.IsSet() && in.Value() == nil {
		ue.add(model.UserErrorCodeRequired, field+" cannot be null", field)
	}
	return in.Value()
}

func (r mutationResolver) deleteBudget(ctx context.Context, in model.DeleteBudgetInput) (*model.DeleteBudgetPayload, error) {
	id, err := parseID(in.ID, relay.TypeBudget)
	if err != nil {
		return nil, err
	}
	var ue userErrors
	res, err := r.Client.Budgets.Delete(ctx, id.BudgetID)
	if rejected(err, &ue, true) {
		return &model.DeleteBudgetPayload{UserErrors: ue}, nil
	}
	if err != nil {
		return nil, err
	}
	if l := loaders.For(ctx); l != nil {
		l.Forget(ctx, id.BudgetID)
	}
	out := &model.DeleteBudgetPayload{Success: res.Success, AlreadyDeleted: res.AlreadyDeleted, UserErrors: []model.UserError{}}
	if res.Success {
		gid := in.ID
		out.DeletedBudgetID = &gid
	}
	return out, nil
}
