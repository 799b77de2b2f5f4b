package graph_test

import (
	"bytes"
	cmpstd "cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/internal/golden"
	"github.com/costgw/gateway/graph/relay"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
)

// rawMarker is written into every upstream answer these tests forge, so a
// raw upstream body reaching a client shows up.
const rawMarker = "RAW-UPSTREAM-BODY"

// leaks are strings no response may carry: the simulator's address, a stack
// trace, a source position, the bearer scheme, upstream headers and raw
// upstream bodies. The caller's key is checked as well.
var leaks = []string{"127.0.0.1", "goroutine", ".go:", "bearer", "x-request-id", "retry-after", "content-type", "://", strings.ToLower(rawMarker)}

// checkedQuery is env.query for this file: it posts through the real handler
// and middleware and fails the test if the raw response leaks anything.
func (e *env) checkedQuery(t *testing.T, key, query string, vars map[string]any) response {
	t.Helper()
	r := e.query(t, key, query, vars)
	raw := string(r.raw)
	low := strings.ToLower(raw)
	for _, s := range leaks {
		if strings.Contains(low, s) {
			t.Errorf("response contains %q: %s", s, raw)
		}
	}
	if key != "" && strings.Contains(raw, key) {
		t.Errorf("response contains the bearer key %q: %s", key, raw)
	}
	return r
}

// mustChecked is checkedQuery that fails on any GraphQL error and decodes data into out.
func (e *env) mustChecked(t *testing.T, key, query string, vars map[string]any, out any) {
	t.Helper()
	r := e.checkedQuery(t, key, query, vars)
	r.mustData(t, out)
}

// answer forges an upstream answer.
func answer(status int, body string) *http.Response {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Request-Id", "req-forged-"+fmt.Sprint(status))
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

// failOn makes the upstream answer requests of method and path with resp().
func failOn(e *env, method, path string, resp func() *http.Response) {
	e.calls.mu.Lock()
	defer e.calls.mu.Unlock()
	e.calls.fail = func(r *http.Request) *http.Response {
		if r.Method == method && r.URL.Path == path {
			return resp()
		}
		return nil
	}
}

// fixture is what the cases need of organization one's data, read through the gateway.
type fixture struct {
	budgetID      string // upstream id of the first budget
	budgetGID     string
	planningGID   string // global id of one of its planning rows
	reportID      string
	budgetsCursor string // endCursor of the first page of two budgets
	recsCursor    string // endCursor of the first page of two recommendations
	otherBudgetID string // upstream id of a budget of organization two
}

func loadFixture(t *testing.T, e *env) fixture {
	t.Helper()
	var got struct {
		Budgets struct {
			Nodes []struct {
				ID, UpstreamID, ExplorerReportID string
				Plannings                        []struct{ ID string }
			}
			PageInfo struct{ EndCursor string }
		}
		Recommendations struct {
			PageInfo struct{ EndCursor string }
		}
	}
	e.mustChecked(t, sim.DemoKey, `{
	  budgets(first: 2) { nodes { id upstreamId explorerReportId plannings { id } } pageInfo { endCursor } }
	  recommendations(first: 2) { pageInfo { endCursor } }
	}`, nil, &got)
	b := got.Budgets.Nodes[0]
	if len(b.Plannings) == 0 || got.Budgets.PageInfo.EndCursor == "" || got.Recommendations.PageInfo.EndCursor == "" {
		t.Fatalf("fixture incomplete: %+v", got)
	}
	return fixture{
		budgetID: b.UpstreamID, budgetGID: b.ID, planningGID: b.Plannings[0].ID, reportID: b.ExplorerReportID,
		budgetsCursor: got.Budgets.PageInfo.EndCursor, recsCursor: got.Recommendations.PageInfo.EndCursor,
		otherBudgetID: e.sim.IDs(sim.OtherOrgKey, sim.CollectionBudgets)[0],
	}
}

// flip changes the middle character of s to another base64url character.
func flip(s string) string {
	i := len(s) / 2
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

func createInput(reportID string, over map[string]any) map[string]any {
	in := map[string]any{"name": "Errors test", "startDate": "2026-01-01", "numberOfPeriods": 12, "explorerReportId": reportID}
	for k, v := range over {
		in[k] = v
	}
	return map[string]any{"in": in}
}

const (
	qBudgets  = `query($first: Int, $after: String) { budgets(first: $first, after: $after) { nodes { id name } } }`
	qBudget   = `query($id: ID!) { budget(id: $id) { id name } }`
	qNode     = `query($id: ID!) { node(id: $id) { id } }`
	qCreate   = `mutation($in: CreateBudgetInput!) { createBudget(input: $in) { budget { id } userErrors { field message code upstreamCode } idempotencyKey } }`
	qUpdate   = `mutation($in: UpdateBudgetInput!) { updateBudget(input: $in) { budget { id name } userErrors { field message code upstreamCode } idempotencyKey } }`
	qLookback = `query($in: BudgetLookbackInput!) { budgetLookback(input: $in) { periods { periodKey actual } } }`
)

// errorCase is a request that fails, with what the failure must look like.
type errorCase struct {
	name  string
	opts  []envOption
	key   string
	query string
	// vars returns the variables, from the fixture.
	vars func(fixture) map[string]any
	// setup injects faults after the fixture is read.
	setup func(*testing.T, *env, fixture)
	code  string
	// status is the HTTP status the answer must have (0: 200).
	status int
	up     *upstreamErr // nil: the gateway's own error, with no upstream extensions
	path   []any
	data   string // the whole data member; "" for a request refused before execution, which has none
	// noCall: the gateway must refuse before calling the upstream.
	noCall bool
	ext    func(fixture) map[string]any // further extensions that must be present
}

// upstreamErr is what an error of the upstream must carry.
type upstreamErr struct {
	code      string // upstreamCode
	status    int    // 0: no answer arrived, so no status
	requestID string // "" means any non-empty id; "-" means none; "?" is not checked
}

var noRetry = withRetry(upstream.RetryPolicy{MaxAttempts: 1})

// errorAreas are the cases of every area: TestEveryCodeHasACase checks
// that together they produce every code a resolver can give.
var errorAreas = map[string][]errorCase{
	"auth":     authCases,
	"ids":      idCases,
	"input":    inputCases,
	"upstream": upstreamCases,
	"panics":   panicCases,
}

func TestEveryCodeHasACase(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{}
	for _, cases := range errorAreas {
		for _, tc := range cases {
			covered[tc.code] = true
		}
	}
	// CONFLICT and FORBIDDEN of a write are userErrors of its payload
	// (TestMutationUserErrors); FORBIDDEN of a read is a GraphQL error.
	for _, code := range []codes.Code{codes.Unauthenticated, codes.Forbidden, codes.NotFound, codes.BadUserInput,
		codes.RateLimited, codes.UpstreamUnavailable, codes.UpstreamBadResponse, codes.Internal} {
		if !covered[string(code)] {
			t.Errorf("no case produces %s", code)
		}
	}
}

// runErrorCases runs the cases of an area through the real handler against
// the simulator, each on its own simulator, and checks each response: its
// code, path, extensions and data, and that it leaks nothing. The responses
// are also pinned by testdata/errors/<area>.golden (rewritten by -update),
// so a change of any message shows in review.
func runErrorCases(t *testing.T, area string) {
	var mu sync.Mutex
	got := map[string]json.RawMessage{}
	t.Cleanup(func() { checkGolden(t, filepath.Join("testdata", "errors", area+".golden"), got) })
	for _, tc := range errorAreas[area] {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tc.run(t)
			mu.Lock()
			got[tc.name] = normalize(r)
			mu.Unlock()
		})
	}
}

func (tc errorCase) run(t *testing.T) response {
	e := newEnv(t, tc.opts...)
	f := loadFixture(t, e)
	var vars map[string]any
	if tc.vars != nil {
		vars = tc.vars(f)
	}
	if tc.setup != nil {
		tc.setup(t, e, f)
	}
	e.calls.take()
	r := e.checkedQuery(t, tc.key, tc.query, vars)
	if calls := e.calls.take(); tc.noCall && len(calls) > 0 {
		t.Errorf("the gateway called the upstream: %v", calls)
	}

	if got := r.code(t); got != tc.code {
		t.Errorf("extensions.code = %q, want %q (error %+v)", got, tc.code, r.Errors[0])
	}
	ge := r.Errors[0]
	if ge.Message == "" {
		t.Error("empty message")
	}
	if diff := cmp.Diff(tc.path, ge.Path); diff != "" {
		t.Errorf("path (-want +got):\n%s", diff)
	}
	tc.up.check(t, ge.Extensions)
	if tc.ext != nil {
		for k, want := range tc.ext(f) {
			if !cmp.Equal(ge.Extensions[k], want) {
				t.Errorf("extensions.%s = %#v, want %#v", k, ge.Extensions[k], want)
			}
		}
	}
	if want := cmpstd.Or(tc.status, http.StatusOK); r.status != want {
		t.Errorf("HTTP status %d, want %d", r.status, want)
	}
	if tc.data == "" {
		if len(r.Data) > 0 {
			t.Errorf("a request refused before execution has data: %s", r.Data)
		}
		return r
	}
	var got, want any
	if err := json.Unmarshal(r.Data, &got); err != nil {
		t.Fatalf("data: %v: %s", err, r.Data)
	}
	if err := json.Unmarshal([]byte(tc.data), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	return r
}

// check checks the upstream extensions of an error against u (nil: the
// gateway's own error, which has none).
func (u *upstreamErr) check(t *testing.T, ext map[string]any) {
	t.Helper()
	if u == nil {
		for _, k := range []string{"upstreamCode", "status", "requestId"} {
			if v, ok := ext[k]; ok {
				t.Errorf("the gateway's own error has extensions.%s = %v", k, v)
			}
		}
		return
	}
	if ext["upstreamCode"] != u.code {
		t.Errorf("extensions.upstreamCode = %v, want %q", ext["upstreamCode"], u.code)
	}
	if u.status == 0 {
		if v, ok := ext["status"]; ok {
			t.Errorf("extensions.status = %v without an answer", v)
		}
	} else if s, ok := ext["status"].(float64); !ok || int(s) != u.status {
		t.Errorf("extensions.status = %#v, want the number %d", ext["status"], u.status)
	}
	id, _ := ext["requestId"].(string)
	switch u.requestID {
	case "?":
	case "":
		if id == "" {
			t.Errorf("extensions.requestId = %#v, want an id", ext["requestId"])
		}
	case "-":
		if v, ok := ext["requestId"]; ok {
			t.Errorf("extensions.requestId = %v without an answer", v)
		}
	default:
		if id != u.requestID {
			t.Errorf("extensions.requestId = %#v, want %q", ext["requestId"], u.requestID)
		}
	}
}

// uuids are replaced in golden responses: request ids and idempotency keys
// made per run.
var uuids = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// normalize is a response as the golden files keep it: the body as it
// came, indented, with run-dependent ids replaced.
func normalize(r response) json.RawMessage {
	var b bytes.Buffer
	if err := json.Indent(&b, r.raw, "    ", "  "); err != nil {
		panic(err)
	}
	return uuids.ReplaceAll(bytes.TrimSpace(b.Bytes()), []byte("<uuid>"))
}

// checkGolden compares got with the golden file at path, or rewrites it
// under -update.
func checkGolden(t *testing.T, path string, got map[string]json.RawMessage) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	golden.Compare(t, path, "responses", b)
}

// Introspection and __typename need no key and no upstream call; an
// operation that selects anything else is refused without a key before it
// runs (401 UNAUTHENTICATED, no data).
func TestNoKeyServesIntrospectionOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct{ name, query, data string }{
		{"typename", `{ __typename }`, `{"__typename":"Query"}`},
		{"schema", `{ __schema { queryType { name } mutationType { name } } }`, `{"__schema":{"queryType":{"name":"Query"},"mutationType":{"name":"Mutation"}}}`},
		{"type", `{ __type(name: "Budget") { name kind } }`, `{"__type":{"name":"Budget","kind":"OBJECT"}}`},
		{"typename of a mutation", `mutation { __typename }`, `{"__typename":"Mutation"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.checkedQuery(t, "", tc.query, nil)
			if len(r.Errors) > 0 {
				t.Fatalf("errors: %+v", r.Errors)
			}
			var got, want any
			_ = json.Unmarshal(r.Data, &got)
			_ = json.Unmarshal([]byte(tc.data), &want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
	// A full introspection query, as tools send it.
	var full struct {
		Schema struct{ Types []struct{ Name string } } `json:"__schema"`
	}
	e.mustChecked(t, "", `{ __schema { types { name fields { name args { name type { name kind ofType { name } } } } } } }`, nil, &full)
	if !slices.ContainsFunc(full.Schema.Types, func(x struct{ Name string }) bool { return x.Name == "BudgetConnection" }) {
		t.Errorf("introspection lacks BudgetConnection: %d types", len(full.Schema.Types))
	}

	for _, q := range []string{`{ __typename budgets { nodes { id } } }`, `{ ... on Query { budgets { nodes { id } } } }`,
		`query { ...Q } fragment Q on Query { budget(id: "x") { id } }`} {
		r := e.checkedQuery(t, "", q, nil)
		if r.code(t) != "UNAUTHENTICATED" || r.status != http.StatusUnauthorized || len(r.Data) > 0 {
			t.Errorf("%s without a key: %d %+v %s, want 401 UNAUTHENTICATED and no data", q, r.status, r.Errors, r.Data)
		}
	}
	if calls := e.calls.take(); len(calls) > 0 {
		t.Errorf("queries without a key called the upstream: %v", calls)
	}
}

type userError struct {
	Field        []string
	Message      string
	Code         string
	UpstreamCode *string
}

type writePayload struct {
	Budget         *struct{ ID, Name string }
	UserErrors     []userError
	IdempotencyKey string
}

// A write's problems that a form can show come back in the payload's
// userErrors, each with its kind (UserErrorCode), the input field, and the
// upstream's own code when the upstream refused; with no GraphQL error, and
// nothing written.
func TestMutationUserErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := loadFixture(t, e)
	before := len(e.sim.IDs(sim.DemoKey, sim.CollectionBudgets))

	var first struct{ CreateBudget *writePayload }
	e.mustChecked(t, sim.DemoKey, qCreate, createInput(f.reportID, map[string]any{"idempotencyKey": "errors-test-key"}), &first)
	if first.CreateBudget == nil || first.CreateBudget.Budget == nil {
		t.Fatal("the first create made no budget")
	}
	before++

	for _, tc := range []struct {
		name  string
		key   string
		over  map[string]any
		field []string // the path: exact, or, for the upstream's refusals, ["input"] or ["input", want]
		code  string
		// msg is a word the message must contain.
		msg string
		// upstream is the upstream's code when it refused (one POST); "" when the gateway did (none).
		upstream string
	}{
		{"start date not the first of a month", sim.DemoKey, map[string]any{"startDate": "2026-01-15"}, []string{"input", "startDate"}, "INVALID_VALUE", "startDate", "validation_error"},
		{"too many periods", sim.DemoKey, map[string]any{"numberOfPeriods": 61}, []string{"input", "numberOfPeriods"}, "INVALID_VALUE", "numberOfPeriods", "validation_error"},
		{"unknown report", sim.DemoKey, map[string]any{"explorerReportId": "rpt_doesnotexist"}, []string{"input", "explorerReportId"}, "INVALID_VALUE", "explorerReportId", "validation_error"},
		{"lookback out of range", sim.DemoKey, map[string]any{"lookbackPeriod": 99}, []string{"input", "lookbackPeriod"}, "INVALID_VALUE", "lookbackPeriod", "validation_error"},
		{"idempotency key reused with another input", sim.DemoKey, map[string]any{"idempotencyKey": "errors-test-key", "name": "Another name"}, []string{"input", "idempotencyKey"}, "CONFLICT", "Idempotency", "idempotency_conflict"},
		{"key without the write scope", sim.ReadOnlyKey, nil, []string{"input"}, "FORBIDDEN", "budgets:write", "forbidden_scope"},
		{"empty name", sim.DemoKey, map[string]any{"name": ""}, []string{"input", "name"}, "REQUIRED", "name", ""},
		{"no periods", sim.DemoKey, map[string]any{"numberOfPeriods": 0}, []string{"input", "numberOfPeriods"}, "INVALID_VALUE", "numberOfPeriods", ""},
		{"idempotency key too long", sim.DemoKey, map[string]any{"idempotencyKey": strings.Repeat("k", 65)}, []string{"input", "idempotencyKey"}, "TOO_LONG", "idempotencyKey", ""},
		{"empty idempotency key", sim.DemoKey, map[string]any{"idempotencyKey": ""}, []string{"input", "idempotencyKey"}, "INVALID_VALUE", "idempotencyKey", ""},
		{"idempotency key with a control character", sim.DemoKey, map[string]any{"idempotencyKey": "key\x01"}, []string{"input", "idempotencyKey"}, "INVALID_VALUE", "idempotencyKey", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.calls.take()
			var got struct{ CreateBudget *writePayload }
			e.mustChecked(t, tc.key, qCreate, createInput(f.reportID, tc.over), &got)
			p := got.CreateBudget
			if p == nil {
				t.Fatal("payload is null")
			}
			if p.Budget != nil {
				t.Errorf("budget = %+v, want null", p.Budget)
			}
			if sent, ok := tc.over["idempotencyKey"]; ok && p.IdempotencyKey != sent {
				t.Errorf("idempotencyKey %q in the payload, want the key sent, %q", p.IdempotencyKey, sent)
			} else if !ok && p.IdempotencyKey == "" {
				t.Error("no idempotencyKey in the payload")
			}
			if len(p.UserErrors) != 1 {
				t.Fatalf("userErrors = %+v, want one", p.UserErrors)
			}
			ue := p.UserErrors[0]
			if tc.upstream != "" {
				// The upstream's envelope names no field, only its message
				// does: the path is the input, or the field when known.
				if !slices.Equal(ue.Field, []string{"input"}) && !slices.Equal(ue.Field, tc.field) {
					t.Errorf("field = %q, want [input] or %q", ue.Field, tc.field)
				}
			} else if !slices.Equal(ue.Field, tc.field) {
				t.Errorf("field = %q, want %q", ue.Field, tc.field)
			}
			if !strings.Contains(ue.Message, tc.msg) {
				t.Errorf("message %q does not name %s", ue.Message, tc.msg)
			}
			if ue.Code != tc.code {
				t.Errorf("code %s, want %s", ue.Code, tc.code)
			}
			if (ue.UpstreamCode == nil) != (tc.upstream == "") || (ue.UpstreamCode != nil && *ue.UpstreamCode != tc.upstream) {
				t.Errorf("upstreamCode %v, want %q", ue.UpstreamCode, tc.upstream)
			}
			posts := 0
			for _, c := range e.calls.take() {
				if c == "POST /v1/budgets" {
					posts++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.upstream != ""]; posts != want {
				t.Errorf("%d createBudget calls, want %d", posts, want)
			}
		})
	}
	if after := len(e.sim.IDs(sim.DemoKey, sim.CollectionBudgets)); after != before {
		t.Errorf("refused creates made %d budgets", after-before)
	}

	// An update the upstream refuses is reported the same way and changes nothing.
	var got struct{ UpdateBudget *writePayload }
	e.mustChecked(t, sim.DemoKey, qUpdate, map[string]any{"in": map[string]any{"id": f.budgetGID, "name": "Renamed", "lookbackPeriod": 99}}, &got)
	if p := got.UpdateBudget; p == nil || p.Budget != nil || len(p.UserErrors) != 1 || p.UserErrors[0].Field[0] != "input" ||
		!strings.Contains(p.UserErrors[0].Message, "lookbackPeriod") || p.UserErrors[0].Code != "INVALID_VALUE" {
		t.Errorf("updateBudget payload = %+v", p)
	}
	// An update's fields are checked as a create's are, each beside its
	// field: an empty name was the upstream's refusal of the whole input.
	for field, v := range map[string]any{"name": "", "numberOfPeriods": 0, "explorerReportId": ""} {
		var bad struct{ UpdateBudget *writePayload }
		e.mustChecked(t, sim.DemoKey, qUpdate, map[string]any{"in": map[string]any{"id": f.budgetGID, field: v}}, &bad)
		if p := bad.UpdateBudget; p == nil || p.Budget != nil || len(p.UserErrors) != 1 ||
			!slices.Equal(p.UserErrors[0].Field, []string{"input", field}) || p.UserErrors[0].UpstreamCode != nil {
			t.Errorf("updateBudget with %s %v: payload = %+v", field, v, p)
		}
	}
	var b struct{ Budget struct{ Name string } }
	e.mustChecked(t, sim.DemoKey, qBudget, map[string]any{"id": f.budgetGID}, &b)
	if b.Budget.Name == "Renamed" {
		t.Error("a refused update renamed the budget")
	}

	// A budget that does not exist is NOT_FOUND on its id.
	var gone struct{ UpdateBudget *writePayload }
	e.mustChecked(t, sim.DemoKey, qUpdate, map[string]any{"in": map[string]any{"id": relay.BudgetID("bud_doesnotexist"), "name": "x"}}, &gone)
	if p := gone.UpdateBudget; p == nil || len(p.UserErrors) != 1 || p.UserErrors[0].Code != "NOT_FOUND" ||
		!slices.Equal(p.UserErrors[0].Field, []string{"input", "id"}) {
		t.Errorf("updateBudget of an unknown budget = %+v", p)
	}
}

// One budget's failing actuals null only that budget's actuals and its
// planning rows' actuals, each with an error pointing at it; every other
// field of every budget is as it would be without the failure.
func TestFailingActualsNullOnlyThatBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withRetry(upstream.RetryPolicy{MaxAttempts: 1}))
	const q = `{ budgets(first: 6) { nodes { upstreamId name metrics { totalActual } actuals { total byPeriod { period amount } } plannings { upstreamId actuals { period amount } } } } }`
	base := e.checkedQuery(t, sim.DemoKey, q, nil)
	if len(base.Errors) > 0 {
		t.Fatalf("errors without a fault: %+v", base.Errors)
	}
	var want map[string]any
	if err := json.Unmarshal(base.Data, &want); err != nil {
		t.Fatal(err)
	}
	nodes := want["budgets"].(map[string]any)["nodes"].([]any)
	const victim = 2
	vb := nodes[victim].(map[string]any)
	id := vb["upstreamId"].(string)
	vb["actuals"] = nil
	plannings := vb["plannings"].([]any)
	wantPaths := []string{fmt.Sprint([]any{"budgets", "nodes", victim, "actuals"})}
	for j, p := range plannings {
		p.(map[string]any)["actuals"] = nil
		wantPaths = append(wantPaths, fmt.Sprint([]any{"budgets", "nodes", victim, "plannings", j, "actuals"}))
	}
	if len(plannings) == 0 {
		t.Fatal("the budget has no planning rows")
	}

	path := "/v1/budgets/" + id + "/actuals"
	failOn(e, "GET", path, func() *http.Response {
		return answer(http.StatusInternalServerError, `{"error":{"code":"internal_error","message":"`+rawMarker+`","request_id":"req-actuals"}}`)
	})
	e.calls.take()
	r := e.checkedQuery(t, sim.DemoKey, q, nil)

	var got map[string]any
	if err := json.Unmarshal(r.Data, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	var gotPaths []string
	for _, ge := range r.Errors {
		gotPaths = append(gotPaths, fmt.Sprint(ge.Path))
		if ge.Extensions["code"] != "UPSTREAM_UNAVAILABLE" || ge.Extensions["upstreamCode"] != "internal_error" ||
			ge.Extensions["status"] != 500.0 || ge.Extensions["requestId"] != "req-actuals" {
			t.Errorf("error at %v: %+v", ge.Path, ge)
		}
	}
	slices.Sort(gotPaths)
	slices.Sort(wantPaths)
	if diff := cmp.Diff(wantPaths, gotPaths); diff != "" {
		t.Errorf("error paths (-want +got):\n%s", diff)
	}
	// The budget's actuals and its rows' actuals share one call, even when it fails.
	n := 0
	for _, c := range e.calls.take() {
		if c == "GET "+path {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d calls to %s, want 1", n, path)
	}
}
