package upstream_test

// This file checks the simulator against openapi.yaml: every request the tests
// send and every answer the simulator gives goes through a RoundTripper that
// validates both with kin-openapi, so the simulator cannot drift from the
// contract without this test failing. It talks plain net/http on purpose: the
// client in package upstream is checked elsewhere, and must not hide a
// mismatch here.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/upstream/sim"
)

// contractOperationIDs are the operations openapi.yaml must describe, no more.
var contractOperationIDs = []string{
	"listRecommendations", "listAnomalies",
	"explorerSummary", "explorerPreviousPeriod", "explorerHistory", "explorerHeatmap", "explorerDimensionValues",
	"listBudgets", "createBudget", "budgetLookbackGet", "budgetLookbackPost", "getBudget", "updateBudget",
	"deleteBudget", "getBudgetActuals", "getBudgetPlanning",
	"listScheduledNotifications",
}

// loadContract loads openapi.yaml and checks that it is a valid OpenAPI document.
func loadContract(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("openapi.yaml")
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	return doc
}

func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	doc := loadContract(t)

	if doc.OpenAPI != "3.0.3" || doc.Info.Version != "1.0.0" {
		t.Errorf("openapi %q, info.version %q; want 3.0.3 and 1.0.0", doc.OpenAPI, doc.Info.Version)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "{base_url}" || doc.Servers[0].Variables["base_url"] == nil {
		t.Errorf("want exactly one server {base_url} with a base_url variable")
	}
	if len(doc.Security) != 1 || doc.Security[0]["bearerAuth"] == nil {
		t.Errorf("want the bearer scheme required globally, got %v", doc.Security)
	}
	if s := doc.Components.SecuritySchemes["bearerAuth"]; s == nil || s.Value.Type != "http" || s.Value.Scheme != "bearer" {
		t.Errorf("want components.securitySchemes.bearerAuth of type http, scheme bearer")
	}

	var got []string
	for path, item := range doc.Paths.Map() {
		if !strings.HasPrefix(path, "/v1/") {
			t.Errorf("path %s does not start with /v1/", path)
		}
		for method, op := range item.Operations() {
			got = append(got, op.OperationID)
			where := method + " " + path + " (" + op.OperationID + ")"
			if len(op.Tags) != 1 {
				t.Errorf("%s: want one tag, got %v", where, op.Tags)
			}
			if op.Security != nil {
				t.Errorf("%s: overrides the global security requirement", where)
			}
			if _, ok := op.Extensions["x-required-scope"].(string); !ok {
				t.Errorf("%s: no x-required-scope", where)
			}
			// Every operation can be refused by the credential checks and by
			// the server, before it runs.
			for _, status := range []int{200, 401, 403, 429, 500, 503} {
				if op.Responses.Status(status) == nil {
					t.Errorf("%s: no %d response", where, status)
				}
			}
			for _, status := range []int{429, 503} {
				if r := op.Responses.Status(status); r != nil && r.Value.Headers["Retry-After"] == nil {
					t.Errorf("%s: %d response without Retry-After", where, status)
				}
			}
			if op.Responses.Default() != nil {
				t.Errorf("%s: has a default response; list the statuses", where)
			}
		}
	}
	slices.Sort(got)
	want := slices.Clone(contractOperationIDs)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("operation ids (-want +got):\n%s", diff)
	}

	errSchema := doc.Components.Schemas["Error"].Value.Properties["error"].Value
	if diff := cmp.Diff([]string{"code", "message", "request_id"}, errSchema.Required); diff != "" {
		t.Errorf("Error.error.required (-want +got):\n%s", diff)
	}
	for _, name := range errSchema.Required {
		if !errSchema.Properties[name].Value.Type.Is("string") {
			t.Errorf("Error.error.%s is not a string", name)
		}
	}
}

// ---------------------------------------------------------------------------
// The validating transport.

// contractExpectation tells the contract transport what one request is meant to be.
// The zero value means: a request the contract allows, to a described operation.
type contractExpectation struct {
	// invalidRequest marks a request that breaks the contract on purpose (a bad
	// limit, a missing Idempotency-Key, no credentials…). The request is not
	// validated; the answer still is.
	invalidRequest bool
	// unrouted is the status (404 or 405) of a request that matches no
	// operation of the document on purpose. The answer is validated against the
	// shared response the document declares for that status.
	unrouted int
}

type contractExpectationKey struct{}

func withContractExpectation(ctx context.Context, e contractExpectation) context.Context {
	return context.WithValue(ctx, contractExpectationKey{}, e)
}

// contractTransport validates every request and every answer against the
// document. A mismatch, or a request that matches no operation when it was not
// meant to, is returned as the RoundTrip error, so the call fails.
type contractTransport struct {
	doc    *openapi3.T
	router routers.Router
	opts   *openapi3filter.Options
	next   http.RoundTripper

	mu   sync.Mutex
	seen map[string]map[int]int // operation id ("" when unrouted) → status → count
}

func newContractTransport(t *testing.T) *contractTransport {
	t.Helper()
	doc := loadContract(t)
	// kin-openapi's server matcher cannot match the {base_url} variable against
	// a full URL (the variable ends at the first "/", inside "http://"). Route
	// on the path alone: a document without servers does exactly that, and the
	// test servers' hosts do not matter to the contract.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	return &contractTransport{
		doc:    doc,
		router: router,
		opts: &openapi3filter.Options{
			AuthenticationFunc:    acceptAnyBearer,
			IncludeResponseStatus: true, // an undocumented status is a mismatch
			SkipSettingDefaults:   true, // never rewrite the request being checked
			MultiError:            true,
			SchemaValidationOptions: []openapi3.SchemaValidationOption{
				openapi3.WithStringFormatValidators(map[string]openapi3.StringFormatValidator{
					"date":      openapi3.NewCallbackValidator(contractParseTime(time.DateOnly)),
					"date-time": openapi3.NewCallbackValidator(contractParseTime(time.RFC3339Nano)),
					"email":     openapi3.NewCallbackValidator(func(s string) error { return errOf(mail.ParseAddress(s)) }),
				}),
			},
		},
		next: http.DefaultTransport,
		seen: make(map[string]map[int]int),
	}
}

// contractParseTime checks a format on the calendar too, not only on its digits.
func contractParseTime(layout string) func(string) error {
	return func(s string) error { return errOf(time.Parse(layout, s)) }
}

// acceptAnyBearer accepts any bearer credential, so that the simulator, not
// the validator, answers an unknown key; a request with no bearer at all breaks
// the contract and must be marked invalidRequest.
func acceptAnyBearer(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if s := in.SecurityScheme; s.Type != "http" || !strings.EqualFold(s.Scheme, "bearer") {
		return fmt.Errorf("unexpected security scheme %q", in.SecuritySchemeName)
	}
	scheme, token, _ := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return errors.New("no bearer credentials")
	}
	return nil
}

func (ct *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	want, _ := ctx.Value(contractExpectationKey{}).(contractExpectation)
	where := req.Method + " " + req.URL.RequestURI()

	var body []byte
	hasBody := req.Body != nil && req.Body != http.NoBody
	if hasBody {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	// withBody copies the request with a fresh reader over the same body,
	// since a RoundTripper must not change the request it was given.
	withBody := func() *http.Request {
		r := req.Clone(ctx)
		if hasBody {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		return r
	}

	checked := withBody()
	route, params, routeErr := ct.findRoute(checked)
	switch {
	case routeErr != nil && want.unrouted == 0:
		return nil, fmt.Errorf("contract: %s matches no operation of openapi.yaml: %w", where, routeErr)
	case routeErr == nil && want.unrouted != 0:
		return nil, fmt.Errorf("contract: %s was meant to match no operation, but matches %s", where, route.Operation.OperationID)
	case routeErr != nil:
		// kin-openapi's router reports a templated path with another method
		// as not found, so ask it about every method instead.
		documented := ct.documentedMethods(req)
		switch {
		case want.unrouted == http.StatusNotFound && len(documented) > 0:
			return nil, fmt.Errorf("contract: %s: meant as an unknown path, but openapi.yaml describes %v on it", where, documented)
		case want.unrouted == http.StatusMethodNotAllowed && len(documented) == 0:
			return nil, fmt.Errorf("contract: %s: meant as a known path with another method, but openapi.yaml does not describe the path", where)
		}
		route = ct.unroutedRoute(req, want.unrouted)
	case !want.invalidRequest:
		err := openapi3filter.ValidateRequest(ctx, &openapi3filter.RequestValidationInput{
			Request: checked, PathParams: params, Route: route, Options: ct.opts,
		})
		if err != nil {
			return nil, fmt.Errorf("contract: request %s does not match openapi.yaml: %w", where, err)
		}
	}

	resp, err := ct.next.RoundTrip(withBody())
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))

	opID := route.Operation.OperationID
	ct.mu.Lock()
	if ct.seen[opID] == nil {
		ct.seen[opID] = make(map[int]int)
	}
	ct.seen[opID][resp.StatusCode]++
	ct.mu.Unlock()

	if want.unrouted != 0 && resp.StatusCode != want.unrouted {
		return nil, fmt.Errorf("contract: %s answered %d, want %d (the path or method is not in openapi.yaml)", where, resp.StatusCode, want.unrouted)
	}
	err = openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: withBody(), PathParams: params, Route: route, Options: ct.opts,
		},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Body:    io.NopCloser(bytes.NewReader(respBody)),
		Options: ct.opts,
	})
	if err != nil {
		return nil, fmt.Errorf("contract: answer %d to %s does not match openapi.yaml: %w\nbody: %s", resp.StatusCode, where, err, respBody)
	}
	if want.unrouted == http.StatusMethodNotAllowed {
		if err := ct.checkAllow(req, resp.Header.Get("Allow")); err != nil {
			return nil, fmt.Errorf("contract: %s: %w", where, err)
		}
	}
	return resp, nil
}

// findRoute is the router's FindRoute, except that an empty path parameter
// matches nothing: kin-openapi's legacy router reads DELETE /v1/budgets as
// DELETE /v1/budgets/{id} with an empty id, which no server would.
func (ct *contractTransport) findRoute(req *http.Request) (*routers.Route, map[string]string, error) {
	route, params, err := ct.router.FindRoute(req)
	if err != nil {
		return nil, nil, err
	}
	for _, v := range params {
		if v == "" {
			return nil, nil, routers.ErrPathNotFound
		}
	}
	return route, params, nil
}

// unroutedRoute is a stand-in operation whose only answer is the shared
// response the document declares for a path or method it does not describe.
func (ct *contractTransport) unroutedRoute(req *http.Request, status int) *routers.Route {
	name := map[int]string{http.StatusNotFound: "NotFound", http.StatusMethodNotAllowed: "MethodNotAllowed"}[status]
	return &routers.Route{
		Spec:   ct.doc,
		Path:   req.URL.Path,
		Method: req.Method,
		Operation: &openapi3.Operation{
			Responses: openapi3.NewResponses(openapi3.WithStatus(status, ct.doc.Components.Responses[name])),
		},
	}
}

// documentedMethods lists the methods the document describes for the path of req.
func (ct *contractTransport) documentedMethods(req *http.Request) []string {
	var methods []string
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		r := req.Clone(req.Context())
		r.Method = m
		if _, _, err := ct.findRoute(r); err == nil {
			methods = append(methods, m)
		}
	}
	return methods
}

// checkAllow compares a 405's Allow header with the methods the document
// describes for the same path.
func (ct *contractTransport) checkAllow(req *http.Request, allow string) error {
	documented := ct.documentedMethods(req)
	var announced []string
	for m := range strings.SplitSeq(allow, ",") {
		m = strings.ToUpper(strings.TrimSpace(m))
		if m != "" && m != "HEAD" && m != "OPTIONS" {
			announced = append(announced, m)
		}
	}
	slices.Sort(announced)
	slices.Sort(documented)
	if !slices.Equal(announced, documented) {
		return fmt.Errorf("Allow %q; the document describes %v for this path", allow, documented)
	}
	return nil
}

// checkCoverage fails unless every operation answered 200 at least once and
// every error status the tests aim at was seen.
func (ct *contractTransport) checkCoverage(t *testing.T, statuses ...int) {
	t.Helper()
	ct.mu.Lock()
	defer ct.mu.Unlock()
	for _, id := range contractOperationIDs {
		if ct.seen[id][http.StatusOK] == 0 {
			t.Errorf("operation %s never answered 200", id)
		}
	}
	for _, status := range statuses {
		n := 0
		for _, byStatus := range ct.seen {
			n += byStatus[status]
		}
		if n == 0 {
			t.Errorf("no answer with status %d was validated", status)
		}
	}
}

// ---------------------------------------------------------------------------
// A plain HTTP harness over one simulator.

type contractHarness struct {
	sim    *sim.Server
	base   string
	client *http.Client
}

func newContractHarness(t *testing.T, ct *contractTransport) *contractHarness {
	t.Helper()
	s := sim.New(sim.Options{})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &contractHarness{
		sim:    s,
		base:   srv.URL,
		client: &http.Client{Transport: ct, Timeout: 10 * time.Second},
	}
}

// contractCall is one request. Body is marshalled as JSON unless it is a []byte, sent
// as is; ContentType defaults to application/json when there is a body.
type contractCall struct {
	Method, Path   string
	Key            string // bearer key; "" sends no Authorization header
	Authorization  string // a raw Authorization header, instead of Key
	Body           any
	ContentType    string
	IdempotencyKey string
	Expect         contractExpectation
}

type contractResult struct {
	Status int
	Header http.Header
	Body   []byte
}

func (h *contractHarness) do(t *testing.T, c contractCall) contractResult {
	t.Helper()
	var body io.Reader
	if c.Body != nil {
		raw, ok := c.Body.([]byte)
		if !ok {
			var err error
			if raw, err = json.Marshal(c.Body); err != nil {
				t.Fatalf("marshal body: %v", err)
			}
		}
		body = bytes.NewReader(raw)
	}
	ctx := withContractExpectation(t.Context(), c.Expect)
	req, err := http.NewRequestWithContext(ctx, c.Method, h.base+c.Path, body)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	switch {
	case c.Authorization != "":
		req.Header.Set("Authorization", c.Authorization)
	case c.Key != "":
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	if c.Body != nil {
		ct := c.ContentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if c.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", c.IdempotencyKey)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.Method, c.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", c.Method, c.Path, err)
	}
	return contractResult{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// contractOK does the call and decodes its 200 answer into a value of type T.
func contractOK[T any](t *testing.T, h *contractHarness, c contractCall) T {
	t.Helper()
	r := h.do(t, c)
	if r.Status != http.StatusOK {
		t.Fatalf("%s %s: status %d, want 200; body %s", c.Method, c.Path, r.Status, r.Body)
	}
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("%s %s: decode: %v", c.Method, c.Path, err)
	}
	return v
}

type contractError struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"request_id"`
	} `json:"error"`
}

// contractFail does the call and checks that it answers status with the error code.
// It returns the envelope and the headers for further checks.
func contractFail(t *testing.T, h *contractHarness, c contractCall, status int, code string) (contractError, http.Header) {
	t.Helper()
	r := h.do(t, c)
	var e contractError
	if r.Status != status {
		t.Fatalf("%s %s: status %d, want %d; body %s", c.Method, c.Path, r.Status, status, r.Body)
	}
	if err := json.Unmarshal(r.Body, &e); err != nil {
		t.Fatalf("%s %s: decode error envelope: %v", c.Method, c.Path, err)
	}
	if e.Error.Code != code {
		t.Errorf("%s %s: error code %q, want %q (message %q)", c.Method, c.Path, e.Error.Code, code, e.Error.Message)
	}
	if e.Error.Message == "" {
		t.Errorf("%s %s: empty error message", c.Method, c.Path)
	}
	if got := r.Header.Get("X-Request-Id"); got != e.Error.RequestID {
		t.Errorf("%s %s: X-Request-Id %q, error.request_id %q; want them equal", c.Method, c.Path, got, e.Error.RequestID)
	}
	return e, r.Header
}

// contractData is the {"data": …} wrapper of every success.
type contractData[T any] struct {
	Data T `json:"data"`
}

type contractPage struct {
	Data       []map[string]any `json:"data"`
	Pagination struct {
		Limit      int     `json:"limit"`
		HasMore    bool    `json:"has_more"`
		NextCursor *string `json:"next_cursor"`
		Total      *int    `json:"total"`
	} `json:"pagination"`
}

type contractBudget struct {
	Budget map[string]any `json:"budget"`
}

// ---------------------------------------------------------------------------
// The test.

// contractExplorerQuery is a valid Explorer body over the 30 days ending with the
// simulator's last day of data.
func contractExplorerQuery() map[string]any {
	return map[string]any{
		"dateRange":   map[string]any{"start": "2026-10-22", "end": "2026-11-20"},
		"groupBy":     "product_product_name",
		"costType":    "line_item_unblended_cost",
		"granularity": "day",
		"filters":     []any{},
	}
}

func TestSimulatorHonoursContract(t *testing.T) {
	ct := newContractTransport(t)

	// Each group runs on its own simulator, so writes in one cannot disturb
	// the counts of another; the coverage check waits for all of them.
	t.Run("group", func(t *testing.T) {
		t.Run("operations", func(t *testing.T) { t.Parallel(); testContractOperations(t, newContractHarness(t, ct)) })
		t.Run("paging", func(t *testing.T) { t.Parallel(); testContractPaging(t, newContractHarness(t, ct)) })
		t.Run("budget round trip", func(t *testing.T) { t.Parallel(); testContractBudgetRoundTrip(t, newContractHarness(t, ct)) })
		t.Run("idempotency", func(t *testing.T) { t.Parallel(); testContractIdempotency(t, newContractHarness(t, ct)) })
		t.Run("errors", func(t *testing.T) { t.Parallel(); testContractErrors(t, newContractHarness(t, ct)) })
		t.Run("faults", func(t *testing.T) { t.Parallel(); testContractFaults(t, newContractHarness(t, ct)) })
	})
	if !t.Failed() {
		ct.checkCoverage(t, 400, 401, 403, 404, 405, 409, 413, 415, 429, 500, 503)
	}
}

// testContractOperations has every read operation answer once with a valid request.
func testContractOperations(t *testing.T, h *contractHarness) {
	key := sim.DemoKey
	for _, path := range []string{"/v1/recommendations", "/v1/anomalies", "/v1/budgets", "/v1/notifications/scheduled"} {
		p := contractOK[contractPage](t, h, contractCall{Method: "GET", Path: path, Key: key})
		if len(p.Data) == 0 {
			t.Errorf("GET %s: empty first page", path)
		}
	}

	for _, granularity := range []string{"day", "week", "month"} {
		q := contractExplorerQuery()
		q["granularity"] = granularity
		q["filters"] = []any{map[string]any{"dimension": "billing_account_name", "operator": "not_in", "values": []string{"nobody"}}}

		contractOK[contractData[map[string]any]](t, h, contractCall{Method: "POST", Path: "/v1/explorer/summary", Key: key, Body: q})
		contractOK[contractData[map[string]any]](t, h, contractCall{Method: "POST", Path: "/v1/explorer/previous-period", Key: key, Body: q})
		contractOK[contractData[map[string]any]](t, h, contractCall{Method: "POST", Path: "/v1/explorer/heatmap", Key: key, Body: q})

		// The schema cannot name the row columns; the contract does: each cost
		// row holds the group-by column, the time column (a YYYYMMDD number)
		// and cost.
		hist := contractOK[contractData[struct {
			CostRows   []map[string]any `json:"costRows"`
			TimeColumn string           `json:"timeColumn"`
			GroupBy    string           `json:"groupBy"`
		}]](t, h, contractCall{Method: "POST", Path: "/v1/explorer/history", Key: key, Body: q})
		if hist.Data.GroupBy != q["groupBy"] {
			t.Errorf("history groupBy %q, want %q", hist.Data.GroupBy, q["groupBy"])
		}
		if len(hist.Data.CostRows) == 0 {
			t.Errorf("history (%s): no cost rows", granularity)
		}
		for _, row := range hist.Data.CostRows {
			if _, ok := row[hist.Data.GroupBy].(string); !ok {
				t.Errorf("history cost row %v: no string %q column", row, hist.Data.GroupBy)
			}
			day, ok := row[hist.Data.TimeColumn].(float64)
			if _, err := time.Parse("20060102", fmt.Sprint(int64(day))); !ok || err != nil || day != float64(int64(day)) {
				t.Errorf("history cost row %v: time column %q is not a YYYYMMDD number", row, hist.Data.TimeColumn)
			}
		}
	}

	for _, dim := range []string{"product_product_name", "billing_account_name"} {
		v := contractOK[contractData[struct {
			Items []struct {
				Value string `json:"value"`
			} `json:"items"`
			Values []string `json:"values"`
		}]](t, h, contractCall{Method: "GET", Path: "/v1/explorer/dimensions/" + dim + "/values", Key: key})
		if len(v.Data.Items) == 0 || len(v.Data.Items) != len(v.Data.Values) {
			t.Errorf("dimension %s: %d items, %d values", dim, len(v.Data.Items), len(v.Data.Values))
		}
	}

	contractOK[contractData[map[string]any]](t, h, contractCall{Method: "GET", Path: "/v1/budgets/lookback", Key: key})

	ids := h.sim.IDs(key, "budgets")
	if len(ids) == 0 {
		t.Fatal("the simulator has no budgets")
	}
	got := contractOK[contractData[struct {
		Budget struct {
			ID               string `json:"id"`
			ExplorerReportID string `json:"explorerReportId"`
		} `json:"budget"`
	}]](t, h, contractCall{Method: "GET", Path: "/v1/budgets/" + ids[0], Key: key})
	if got.Data.Budget.ID != ids[0] {
		t.Errorf("getBudget %s: id %q", ids[0], got.Data.Budget.ID)
	}
	contractOK[contractData[map[string]any]](t, h, contractCall{Method: "GET", Path: "/v1/budgets/" + ids[0] + "/actuals", Key: key})
	contractOK[contractData[map[string]any]](t, h, contractCall{Method: "GET", Path: "/v1/budgets/" + ids[0] + "/planning", Key: key})

	lb := contractOK[contractData[struct {
		Periods []any `json:"periods"`
	}]](t, h, contractCall{Method: "POST", Path: "/v1/budgets/lookback", Key: key, Body: map[string]any{
		"explorerReportId": got.Data.Budget.ExplorerReportID,
		"startDate":        "2026-09-01",
		"period":           "MONTHLY",
		"lookbackPeriod":   4,
		"numberOfPeriods":  12,
	}})
	if len(lb.Data.Periods) != 4 {
		t.Errorf("lookback POST with lookbackPeriod 4: %d periods", len(lb.Data.Periods))
	}

	// The read-only key reads everything it has a scope for.
	contractOK[contractPage](t, h, contractCall{Method: "GET", Path: "/v1/budgets", Key: sim.ReadOnlyKey})
	contractOK[contractPage](t, h, contractCall{Method: "GET", Path: "/v1/notifications/scheduled", Key: sim.ReadOnlyKey})
}

// testContractPaging walks every list to its end with several page sizes and checks
// that the pages add up to the whole collection, once each, in order.
func testContractPaging(t *testing.T, h *contractHarness) {
	lists := []struct {
		path, collection, idField string
	}{
		{"/v1/recommendations", "recommendations", "recommendation_id"},
		{"/v1/anomalies", "anomalies", "anomaly_id"},
		{"/v1/budgets", "budgets", "id"},
		{"/v1/notifications/scheduled", "notifications", "id"},
	}
	for _, key := range []string{sim.DemoKey, sim.OtherOrgKey} {
		for _, l := range lists {
			want := h.sim.IDs(key, l.collection)
			if len(want) == 0 {
				t.Errorf("%s: the simulator has no %s", key, l.collection)
				continue
			}
			for _, limit := range []int{0, 7, 200} { // 0: no limit parameter, the default
				name := fmt.Sprintf("%s %s limit=%d", key, l.path, limit)
				got := contractWalk(t, h, key, l.path, l.idField, limit, len(want))
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: ids (-sim.IDs +pages):\n%s", name, diff)
				}
			}
		}
	}
}

// contractWalk follows next_cursor to the end and returns the ids in page order.
func contractWalk(t *testing.T, h *contractHarness, key, path, idField string, limit, total int) []string {
	t.Helper()
	applied := limit
	if applied == 0 {
		applied = 50
	}
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > total+1 {
			t.Fatalf("%s: more pages than records; the cursor does not advance", path)
		}
		q := []string{}
		if limit != 0 {
			q = append(q, fmt.Sprintf("limit=%d", limit))
		}
		if cursor != "" {
			q = append(q, "cursor="+cursor)
		}
		u := path
		if len(q) > 0 {
			u += "?" + strings.Join(q, "&")
		}
		p := contractOK[contractPage](t, h, contractCall{Method: "GET", Path: u, Key: key})
		pg := p.Pagination
		if pg.Limit != applied {
			t.Errorf("%s: pagination.limit %d, want %d", u, pg.Limit, applied)
		}
		if pg.HasMore != (pg.NextCursor != nil) {
			t.Errorf("%s: has_more %v but next_cursor %v", u, pg.HasMore, pg.NextCursor)
		}
		if len(p.Data) > applied || (pg.HasMore && len(p.Data) != applied) {
			t.Errorf("%s: %d records on a page of %d (has_more %v)", u, len(p.Data), applied, pg.HasMore)
		}
		if (pg.Total != nil) != (path == "/v1/notifications/scheduled") {
			t.Errorf("%s: pagination.total present: %v; want it on the scheduled-notifications list only", u, pg.Total != nil)
		} else if pg.Total != nil && *pg.Total != total {
			t.Errorf("%s: pagination.total %d, want %d", u, *pg.Total, total)
		}
		for _, rec := range p.Data {
			id, _ := rec[idField].(string)
			ids = append(ids, id)
		}
		if !pg.HasMore {
			return ids
		}
		cursor = *pg.NextCursor
	}
}

// contractCreateBody is a valid create body for the organization of key.
func contractCreateBody(t *testing.T, h *contractHarness, key, name string) map[string]any {
	t.Helper()
	ids := h.sim.IDs(key, "budgets")
	b := contractOK[contractData[contractBudget]](t, h, contractCall{Method: "GET", Path: "/v1/budgets/" + ids[0], Key: key})
	return map[string]any{
		"name":             name,
		"targetType":       "BUDGET",
		"period":           "MONTHLY",
		"status":           "DRAFT",
		"numberOfPeriods":  12,
		"startDate":        "2027-01-01",
		"explorerReportId": b.Data.Budget["explorerReportId"],
		"growthRate":       5,
		"notAField":        "accepted and ignored",
	}
}

func testContractBudgetRoundTrip(t *testing.T, h *contractHarness) {
	key := sim.DemoKey
	before := h.sim.IDs(key, "budgets")

	body := contractCreateBody(t, h, key, "Contract test budget")
	created := contractOK[contractData[contractBudget]](t, h, contractCall{Method: "POST", Path: "/v1/budgets", Key: key, Body: body, IdempotencyKey: "create-1"}).Data.Budget
	id, _ := created["id"].(string)
	for field, want := range map[string]any{"name": "Contract test budget", "status": "DRAFT", "startDate": "2027-01-01", "endDate": "2027-12-01"} {
		if created[field] != want {
			t.Errorf("created budget %s = %v, want %v", field, created[field], want)
		}
	}
	if created["createdAt"] != created["updatedAt"] {
		t.Errorf("created budget: createdAt %v != updatedAt %v", created["createdAt"], created["updatedAt"])
	}

	got := contractOK[contractData[contractBudget]](t, h, contractCall{Method: "GET", Path: "/v1/budgets/" + id, Key: key}).Data.Budget
	if diff := cmp.Diff(created, got); diff != "" {
		t.Errorf("getBudget after createBudget (-created +got):\n%s", diff)
	}
	if ids := h.sim.IDs(key, "budgets"); !slices.Equal(ids, append(slices.Clone(before), id)) {
		t.Errorf("budgets after create: %v, want the old ones then %s", ids, id)
	}
	last := contractWalk(t, h, key, "/v1/budgets", "id", 200, len(before)+1)
	if last[len(last)-1] != id {
		t.Errorf("listBudgets: last id %s, want the new %s", last[len(last)-1], id)
	}

	updated := contractOK[contractData[contractBudget]](t, h, contractCall{
		Method: "PATCH", Path: "/v1/budgets/" + id, Key: key, IdempotencyKey: "update-1",
		Body: map[string]any{"name": "Renamed", "numberOfPeriods": 6, "id": "ignored"},
	}).Data.Budget
	if updated["id"] != id || updated["name"] != "Renamed" || updated["endDate"] != "2027-06-01" {
		t.Errorf("updated budget: id %v name %v endDate %v; want %s, Renamed, 2027-06-01", updated["id"], updated["name"], updated["endDate"], id)
	}
	if updated["createdAt"] != created["createdAt"] {
		t.Errorf("update moved createdAt from %v to %v", created["createdAt"], updated["createdAt"])
	}
	// Fixed-width UTC timestamps order as strings.
	if u, c := updated["updatedAt"].(string), created["updatedAt"].(string); u <= c {
		t.Errorf("updatedAt did not move forward: %s, then %s", c, u)
	}

	del := contractOK[contractData[struct {
		Success bool `json:"success"`
	}]](t, h, contractCall{Method: "DELETE", Path: "/v1/budgets/" + id, Key: key})
	if !del.Data.Success {
		t.Errorf("deleteBudget: success false")
	}
	for _, c := range []contractCall{
		{Method: "GET", Path: "/v1/budgets/" + id},
		{Method: "GET", Path: "/v1/budgets/" + id + "/actuals"},
		{Method: "GET", Path: "/v1/budgets/" + id + "/planning"},
		{Method: "PATCH", Path: "/v1/budgets/" + id, IdempotencyKey: "update-2", Body: map[string]any{"name": "x"}},
		{Method: "DELETE", Path: "/v1/budgets/" + id},
	} {
		c.Key = key
		contractFail(t, h, c, http.StatusNotFound, "not_found")
	}
	if ids := h.sim.IDs(key, "budgets"); !slices.Equal(ids, before) {
		t.Errorf("budgets after delete: %v, want %v", ids, before)
	}
}

func testContractIdempotency(t *testing.T, h *contractHarness) {
	key := sim.DemoKey
	body := contractCreateBody(t, h, key, "Idempotent budget")
	create := contractCall{Method: "POST", Path: "/v1/budgets", Key: key, Body: body, IdempotencyKey: "idem-create"}

	first := h.do(t, create)
	if first.Status != http.StatusOK {
		t.Fatalf("create: status %d; body %s", first.Status, first.Body)
	}
	n := len(h.sim.IDs(key, "budgets"))
	replay := h.do(t, create)
	if replay.Status != http.StatusOK || !bytes.Equal(replay.Body, first.Body) {
		t.Errorf("replayed create: status %d body %s; want 200 and the first body %s", replay.Status, replay.Body, first.Body)
	}
	if got := replay.Header.Get("Idempotent-Replayed"); got != "true" {
		t.Errorf("replayed create: Idempotent-Replayed %q, want true", got)
	}
	if got := first.Header.Get("Idempotent-Replayed"); got != "" {
		t.Errorf("first create: Idempotent-Replayed %q, want none", got)
	}
	if got := len(h.sim.IDs(key, "budgets")); got != n {
		t.Errorf("replay created a budget: %d budgets, want %d", got, n)
	}

	other := create
	other.Body = contractCreateBody(t, h, key, "Another name")
	contractFail(t, h, other, http.StatusConflict, "idempotency_conflict")

	// Keys are scoped per API key: another organization may use the same one.
	elsewhere := create
	elsewhere.Key = sim.OtherOrgKey
	elsewhere.Body = contractCreateBody(t, h, sim.OtherOrgKey, "Idempotent budget")
	contractOK[contractData[contractBudget]](t, h, elsewhere)

	var created contractData[contractBudget]
	if err := json.Unmarshal(first.Body, &created); err != nil {
		t.Fatal(err)
	}
	id, _ := created.Data.Budget["id"].(string)
	update := contractCall{Method: "PATCH", Path: "/v1/budgets/" + id, Key: key, Body: map[string]any{"name": "Once"}, IdempotencyKey: "idem-update"}
	u1 := h.do(t, update)
	u2 := h.do(t, update)
	if u1.Status != http.StatusOK || u2.Status != http.StatusOK || !bytes.Equal(u1.Body, u2.Body) || u2.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replayed update: %d %s then %d %s (replayed %q)", u1.Status, u1.Body, u2.Status, u2.Body, u2.Header.Get("Idempotent-Replayed"))
	}
	update.Body = map[string]any{"name": "Twice"}
	contractFail(t, h, update, http.StatusConflict, "idempotency_conflict")
	// The same key on another path is another request too.
	update.Path = "/v1/budgets/" + h.sim.IDs(key, "budgets")[0]
	update.Body = map[string]any{"name": "Once"}
	contractFail(t, h, update, http.StatusConflict, "idempotency_conflict")

	// The operation's own 400 is stored and replayed like a success.
	invalid := contractCall{
		Method: "POST", Path: "/v1/budgets", Key: key, IdempotencyKey: "idem-invalid",
		Body:   map[string]any{"startDate": "2027-01-01", "numberOfPeriods": 1},
		Expect: contractExpectation{invalidRequest: true},
	}
	contractFail(t, h, invalid, http.StatusBadRequest, "validation_error")
	r := h.do(t, invalid)
	if r.Status != http.StatusBadRequest || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replayed 400: status %d, Idempotent-Replayed %q", r.Status, r.Header.Get("Idempotent-Replayed"))
	}
}

func testContractErrors(t *testing.T, h *contractHarness) {
	key := sim.DemoKey
	budgets := h.sim.IDs(key, "budgets")
	otherBudget := h.sim.IDs(sim.OtherOrgKey, "budgets")[0]
	cursor := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	invalid := contractExpectation{invalidRequest: true}
	validCreate := contractCreateBody(t, h, key, "Refused")
	bigQuery := contractExplorerQuery()
	bigQuery["padding"] = strings.Repeat("x", 1<<20+1)

	tests := []struct {
		name   string
		call   contractCall
		status int
		code   string
		// message, when set, must appear in error.message.
		message string
	}{
		// 400
		{"limit zero", contractCall{Method: "GET", Path: "/v1/budgets?limit=0", Expect: invalid}, 400, "invalid_limit", ""},
		{"limit too big", contractCall{Method: "GET", Path: "/v1/recommendations?limit=201", Expect: invalid}, 400, "invalid_limit", ""},
		{"limit not a number", contractCall{Method: "GET", Path: "/v1/anomalies?limit=ten", Expect: invalid}, 400, "invalid_limit", ""},
		{"limit not an integer", contractCall{Method: "GET", Path: "/v1/notifications/scheduled?limit=2.5", Expect: invalid}, 400, "invalid_limit", ""},
		{"cursor garbage", contractCall{Method: "GET", Path: "/v1/budgets?cursor=not-a-cursor!"}, 400, "invalid_cursor", ""},
		{"cursor negative", contractCall{Method: "GET", Path: "/v1/anomalies?cursor=" + cursor(`{"after":-1}`)}, 400, "invalid_cursor", ""},
		{"cursor extra field", contractCall{Method: "GET", Path: "/v1/recommendations?cursor=" + cursor(`{"after":1,"x":2}`)}, 400, "invalid_cursor", ""},
		{"body not JSON", contractCall{Method: "POST", Path: "/v1/explorer/summary", Body: []byte(`{"dateRange":`), Expect: invalid}, 400, "invalid_json", ""},
		{"body an array", contractCall{Method: "POST", Path: "/v1/budgets", Body: []byte(`[]`), IdempotencyKey: "err-array", Expect: invalid}, 400, "invalid_json", ""},
		{"body missing name", contractCall{Method: "POST", Path: "/v1/budgets", IdempotencyKey: "err-name", Body: map[string]any{"startDate": "2027-01-01", "numberOfPeriods": 1, "explorerReportId": validCreate["explorerReportId"]}, Expect: invalid}, 400, "validation_error", "name"},
		{"body wrong type", contractCall{Method: "PATCH", Path: "/v1/budgets/" + budgets[0], IdempotencyKey: "err-type", Body: map[string]any{"numberOfPeriods": "twelve"}, Expect: invalid}, 400, "validation_error", "numberOfPeriods"},
		{"explorer unknown groupBy", contractCall{Method: "POST", Path: "/v1/explorer/history", Body: func() map[string]any { q := contractExplorerQuery(); q["groupBy"] = "no_such_column"; return q }()}, 400, "validation_error", "groupBy"},
		{"explorer reversed range", contractCall{Method: "POST", Path: "/v1/explorer/heatmap", Body: func() map[string]any {
			q := contractExplorerQuery()
			q["dateRange"] = map[string]any{"start": "2026-11-20", "end": "2026-11-01"}
			return q
		}()}, 400, "validation_error", ""},
		{"lookback missing report", contractCall{Method: "POST", Path: "/v1/budgets/lookback", Body: map[string]any{"startDate": "2026-09-01"}, Expect: invalid}, 400, "validation_error", "explorerReportId"},
		{"create without Idempotency-Key", contractCall{Method: "POST", Path: "/v1/budgets", Body: validCreate, Expect: invalid}, 400, "idempotency_key_missing", ""},
		{"update without Idempotency-Key", contractCall{Method: "PATCH", Path: "/v1/budgets/" + budgets[0], Body: map[string]any{"name": "x"}, Expect: invalid}, 400, "idempotency_key_missing", ""},
		{"Idempotency-Key too long", contractCall{Method: "POST", Path: "/v1/budgets", Body: validCreate, IdempotencyKey: strings.Repeat("k", 65), Expect: invalid}, 400, "idempotency_key_invalid", ""},
		// 401
		{"no credentials", contractCall{Method: "GET", Path: "/v1/budgets", Key: "-", Expect: invalid}, 401, "missing_credentials", ""},
		{"not a bearer", contractCall{Method: "GET", Path: "/v1/budgets", Authorization: "Basic ZGVtbzprZXk=", Expect: invalid}, 401, "missing_credentials", ""},
		{"key in the query string", contractCall{Method: "GET", Path: "/v1/budgets?api_key=" + key, Key: "-", Expect: invalid}, 401, "missing_credentials", ""},
		{"unknown key", contractCall{Method: "GET", Path: "/v1/recommendations", Key: "no-such-key"}, 401, "invalid_credentials", ""},
		{"unknown key before 404", contractCall{Method: "GET", Path: "/v1/budgets/" + budgets[0], Key: "no-such-key"}, 401, "invalid_credentials", ""},
		// 403
		{"read-only key creates", contractCall{Method: "POST", Path: "/v1/budgets", Key: sim.ReadOnlyKey, Body: validCreate, IdempotencyKey: "err-ro"}, 403, "forbidden_scope", "budgets:write"},
		{"read-only key updates", contractCall{Method: "PATCH", Path: "/v1/budgets/" + budgets[0], Key: sim.ReadOnlyKey, Body: map[string]any{"name": "x"}, IdempotencyKey: "err-ro2"}, 403, "forbidden_scope", "budgets:write"},
		{"read-only key deletes", contractCall{Method: "DELETE", Path: "/v1/budgets/" + budgets[0], Key: sim.ReadOnlyKey}, 403, "forbidden_scope", "budgets:write"},
		{"unentitled organization", contractCall{Method: "GET", Path: "/v1/budgets", Key: sim.UnentitledKey}, 403, "forbidden_entitlement", ""},
		{"unentitled organization, Explorer", contractCall{Method: "POST", Path: "/v1/explorer/summary", Key: sim.UnentitledKey, Body: contractExplorerQuery()}, 403, "forbidden_entitlement", ""},
		// 404
		{"unknown budget", contractCall{Method: "GET", Path: "/v1/budgets/bud_does_not_exist"}, 404, "not_found", ""},
		{"budget of another organization", contractCall{Method: "GET", Path: "/v1/budgets/" + otherBudget}, 404, "not_found", ""},
		{"actuals of another organization", contractCall{Method: "GET", Path: "/v1/budgets/" + otherBudget + "/actuals"}, 404, "not_found", ""},
		{"update another organization's budget", contractCall{Method: "PATCH", Path: "/v1/budgets/" + otherBudget, Body: map[string]any{"name": "x"}, IdempotencyKey: "err-other"}, 404, "not_found", ""},
		{"delete another organization's budget", contractCall{Method: "DELETE", Path: "/v1/budgets/" + otherBudget}, 404, "not_found", ""},
		{"unknown dimension", contractCall{Method: "GET", Path: "/v1/explorer/dimensions/no_such_column/values"}, 404, "not_found", ""},
		{"unknown path", contractCall{Method: "GET", Path: "/v1/reports", Expect: contractExpectation{unrouted: 404}}, 404, "not_found", ""},
		{"unknown path under a budget", contractCall{Method: "GET", Path: "/v1/budgets/" + budgets[0] + "/alerts", Expect: contractExpectation{unrouted: 404}}, 404, "not_found", ""},
		// 405
		{"PUT a budget", contractCall{Method: "PUT", Path: "/v1/budgets/" + budgets[0], Body: map[string]any{"name": "x"}, Expect: contractExpectation{unrouted: 405}}, 405, "method_not_allowed", ""},
		{"DELETE the budget list", contractCall{Method: "DELETE", Path: "/v1/budgets", Expect: contractExpectation{unrouted: 405}}, 405, "method_not_allowed", ""},
		{"POST the recommendations", contractCall{Method: "POST", Path: "/v1/recommendations", Body: map[string]any{}, Expect: contractExpectation{unrouted: 405}}, 405, "method_not_allowed", ""},
		{"GET an Explorer query", contractCall{Method: "GET", Path: "/v1/explorer/summary", Expect: contractExpectation{unrouted: 405}}, 405, "method_not_allowed", ""},
		// 413 and 415
		{"body too large", contractCall{Method: "POST", Path: "/v1/explorer/summary", Body: bigQuery}, 413, "payload_too_large", ""},
		{"body not sent as JSON", contractCall{Method: "POST", Path: "/v1/explorer/summary", Body: []byte(`{}`), ContentType: "text/plain", Expect: invalid}, 415, "unsupported_media_type", ""},
		{"update body not sent as JSON", contractCall{Method: "PATCH", Path: "/v1/budgets/" + budgets[0], Body: []byte(`{"name":"x"}`), ContentType: "application/x-www-form-urlencoded", IdempotencyKey: "err-415", Expect: invalid}, 415, "unsupported_media_type", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.call
			switch c.Key {
			case "":
				if c.Authorization == "" {
					c.Key = key
				}
			case "-":
				c.Key = ""
			}
			e, _ := contractFail(t, h, c, tt.status, tt.code)
			if tt.message != "" && !strings.Contains(e.Error.Message, tt.message) {
				t.Errorf("message %q does not name %q", e.Error.Message, tt.message)
			}
		})
	}
}

// testContractFaults has the simulator inject each fault that answers, so that those
// answers are validated too.
func testContractFaults(t *testing.T, h *contractHarness) {
	key := sim.DemoKey
	budget := h.sim.IDs(key, "budgets")[0]
	calls := []contractCall{
		{Method: "GET", Path: "/v1/budgets?limit=3"},
		{Method: "GET", Path: "/v1/budgets/" + budget},
		{Method: "POST", Path: "/v1/explorer/summary", Body: contractExplorerQuery()},
		{Method: "PATCH", Path: "/v1/budgets/" + budget, Body: map[string]any{"name": "x"}, IdempotencyKey: "fault"},
		{Method: "GET", Path: "/v1/notifications/scheduled"},
	}
	tests := []struct {
		name       string
		faults     sim.Faults
		status     int
		code       string
		retryAfter string
	}{
		{"500", sim.Faults{Error500: 1}, 500, "internal_error", ""},
		{"503", sim.Faults{Error503: 1, RetryAfter: 2 * time.Second}, 503, "service_unavailable", "2"},
		{"429", sim.Faults{RateLimit429: 1, RetryAfter: 1500 * time.Millisecond}, 429, "rate_limited", "2"},
	}
	for _, tt := range tests {
		h.sim.SetFaults(tt.faults)
		for _, c := range calls {
			c.Key = key
			_, header := contractFail(t, h, c, tt.status, tt.code)
			if got := header.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("%s %s with %s faults: Retry-After %q, want %q", c.Method, c.Path, tt.name, got, tt.retryAfter)
			}
		}
	}
	h.sim.SetFaults(sim.Faults{})
	// Faults are not stored under the Idempotency-Key: the write goes through now.
	contractOK[contractData[contractBudget]](t, h, contractCall{Method: "PATCH", Path: "/v1/budgets/" + budget, Key: key, Body: map[string]any{"name": "x"}, IdempotencyKey: "fault"})
}
