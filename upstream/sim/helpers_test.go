package sim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream/sim"
)

// asOf is the default data date.
var asOf = time.Date(2026, time.November, 20, 0, 0, 0, 0, time.UTC)

// fakeClock is a settable clock for write timestamps and idempotency expiry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, time.November, 21, 9, 30, 0, 123456789, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a simulator served over real HTTP.
type env struct {
	sim    *sim.Server
	url    string
	client *http.Client
}

func newEnv(t *testing.T, opts sim.Options) *env {
	t.Helper()
	s := sim.New(opts)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	// Each env has its own transport, so tests never share connections.
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	t.Cleanup(c.CloseIdleConnections)
	return &env{sim: s, url: srv.URL, client: c}
}

// withoutKeepAlive switches the env to a fresh connection per request. Drop
// tests need it: net/http retries a request that failed on a reused
// connection, which would turn one dropped request into two.
func (e *env) withoutKeepAlive() *env {
	e.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	return e
}

// result is a complete answer.
type result struct {
	status int
	header http.Header
	body   []byte
}

// req describes one request; the zero value is GET with no key.
type req struct {
	method  string
	path    string
	key     string
	body    any // string: sent as is; otherwise marshalled
	idem    string
	headers map[string]string
}

func (e *env) do(t *testing.T, r req) result {
	t.Helper()
	res, err := e.try(r)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	return res
}

func (e *env) try(r req) (result, error) {
	method := r.method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return result{}, err
		}
		body = bytes.NewReader(raw)
	}
	hr, err := http.NewRequest(method, e.url+r.path, body)
	if err != nil {
		return result{}, err
	}
	if r.key != "" {
		hr.Header.Set("Authorization", "Bearer "+r.key)
	}
	if r.body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.idem != "" {
		hr.Header.Set("Idempotency-Key", r.idem)
	}
	for k, v := range r.headers {
		hr.Header.Set(k, v)
	}
	resp, err := e.client.Do(hr)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return result{}, err
	}
	return result{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// get is a GET with DemoKey unless another key is given.
func (e *env) get(t *testing.T, path string, key ...string) result {
	t.Helper()
	k := sim.DemoKey
	if len(key) > 0 {
		k = key[0]
	}
	return e.do(t, req{path: path, key: k})
}

// obj decodes the body as a JSON object, numbers as float64.
func (r result) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// data returns the "data" member of a 200 answer.
func (r result) data(t *testing.T) any {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", r.status, r.body)
	}
	return r.obj(t)["data"]
}

// dataObj returns "data" as an object.
func (r result) dataObj(t *testing.T) map[string]any {
	t.Helper()
	m, ok := r.data(t).(map[string]any)
	if !ok {
		t.Fatalf("data is not an object: %s", r.body)
	}
	return m
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// wantError checks status, code and the envelope's shape, and returns the
// message.
func (r result) wantError(t *testing.T, status int, code string) string {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	m := r.obj(t)
	if len(m) != 1 {
		t.Errorf("envelope has members beyond error: %s", r.body)
	}
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object: %s", r.body)
	}
	if len(e) != 3 {
		t.Errorf("error has %d members, want code, message, request_id: %s", len(e), r.body)
	}
	if e["code"] != code {
		t.Errorf("code %v, want %s (%s)", e["code"], code, r.body)
	}
	msg, _ := e["message"].(string)
	if msg == "" {
		t.Errorf("empty message: %s", r.body)
	}
	id, _ := e["request_id"].(string)
	if !uuidV4.MatchString(id) {
		t.Errorf("request_id %q is not a uuid v4", id)
	}
	if h := r.header.Get("X-Request-Id"); h != id {
		t.Errorf("X-Request-Id %q, body request_id %q", h, id)
	}
	return msg
}

// Shape checking: each field of a record has an expected JSON kind.
const (
	kString    = "string"
	kNumber    = "number"
	kInteger   = "integer"
	kBool      = "bool"
	kObject    = "object"
	kArray     = "array"
	kDate      = "date"
	kTimestamp = "timestamp"
	kNull      = "null"
)

var (
	dateRe      = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	timestampRe = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
)

// kindOf classifies a decoded JSON value; a string that looks like a date or
// timestamp is still a string for kinds that accept a string.
func matchesKind(v any, kind string) bool {
	switch kind {
	case kNull:
		return v == nil
	case kString:
		_, ok := v.(string)
		return ok
	case kDate:
		return isTime(v, dateRe, "2006-01-02")
	case kTimestamp:
		return isTime(v, timestampRe, "2006-01-02T15:04:05.000Z")
	case kNumber:
		_, ok := v.(float64)
		return ok
	case kInteger:
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case kBool:
		_, ok := v.(bool)
		return ok
	case kObject:
		_, ok := v.(map[string]any)
		return ok
	case kArray:
		_, ok := v.([]any)
		return ok
	}
	return false
}

// isTime reports whether v is a string written as re that parses with
// layout: a real date, not only the digits of one.
func isTime(v any, re *regexp.Regexp, layout string) bool {
	s, ok := v.(string)
	if !ok || !re.MatchString(s) {
		return false
	}
	_, err := time.Parse(layout, s)
	return err == nil
}

// checkShape checks that every field in want is present with one of the
// allowed kinds ("string|null"). Extra fields are allowed: records are open.
func checkShape(t *testing.T, what string, v any, want map[string]string) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s: not an object: %v", what, v)
		return
	}
	for field, kinds := range want {
		val, present := m[field]
		if !present {
			t.Errorf("%s: field %q missing", what, field)
			continue
		}
		okKind := false
		for _, k := range strings.Split(kinds, "|") {
			if matchesKind(val, k) {
				okKind = true
				break
			}
		}
		if !okKind {
			t.Errorf("%s: field %q = %#v, want %s", what, field, val, kinds)
		}
	}
}

// cents converts a JSON money number to integer cents, failing when it has
// more than two decimals.
func cents(t *testing.T, v any) int64 {
	t.Helper()
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("not a number: %#v", v)
	}
	c := int64(f*100 + 0.5)
	if f < 0 {
		c = int64(f*100 - 0.5)
	}
	if d := f*100 - float64(c); d > 1e-6 || d < -1e-6 {
		t.Fatalf("%v has more than two decimals", f)
	}
	return c
}

// Record shapes from the contract.
var (
	recommendationShape = map[string]string{
		"recommendation_id": kString, "recommendation_name": kString, "estimated_monthly_savings": kNumber,
		"implementation_effort": kString, "category": kString, "action_type": kString,
		"account_name": kString, "region": kString, "resource_id": kString,
	}
	anomalyShape = map[string]string{
		"anomaly_id": kString, "service": kString, "start_date": kDate, "end_date": kDate,
		"score_current": kNumber, "score_max": kNumber, "impact_max": kNumber, "impact_total": kNumber,
		"impact_pct": kNumber, "impact_actual_spend": kNumber, "impact_expected_spend": kNumber,
		"dimension_value": kString, "detection_source": kString,
	}
	budgetShape = map[string]string{
		"id": kString, "name": kString, "targetType": kString, "period": kString, "status": kString,
		"numberOfPeriods": kInteger, "startDate": kDate, "endDate": kDate, "lookbackPeriod": "integer|null",
		"budgetType": "null|string|number|object|array|bool", "startingValue": "null|string|number|object|array|bool",
		"customStartingValue": "null|string|number|object|array|bool", "growthRate": "null|string|number|object|array|bool",
		"normalizationPeriod": kBool, "organizationId": kString, "serviceClientId": kInteger,
		"creatorId": kString, "explorerReportId": kString, "createdAt": kTimestamp, "updatedAt": kTimestamp,
		"explorerReport": kObject, "creator": kObject, "plannings": kArray,
	}
	planningShape = map[string]string{
		"id": kString, "budgetId": kString, "dimension1": kString, "dimension2": kString,
		"previousMonth": kNumber, "avgLookback": kNumber, "percentGrowth": kNumber, "percentSpend": "number|null",
		"targetItems": kObject, "targetType": kString, "createdAt": kTimestamp,
	}
	notificationShape = map[string]string{
		"id": kString, "recipientEmail": kString, "subject": kString, "scheduleType": kString,
		"scheduledAt": kTimestamp, "recurrenceFrequency": kString, "recurrenceTimezone": kString,
		"recurrenceWeekday": kInteger, "recurrenceDayOfMonth": "integer|null", "cronExpression": kString,
		"status": kString, "sentAt": "timestamp|null", "errorMessage": "string|null",
		"nextAttemptAt": "timestamp|null", "createdAt": kTimestamp, "updatedAt": kTimestamp,
		"canvasId": "string|null", "explorerReportId": "string|null", "includeAssistantAnalysis": kBool,
	}
	paginationShape = map[string]string{"limit": kInteger, "has_more": kBool, "next_cursor": "string|null"}
)

// checkBudget checks a budget record and its nested objects.
func checkBudget(t *testing.T, what string, b any) {
	t.Helper()
	checkShape(t, what, b, budgetShape)
	m, ok := b.(map[string]any)
	if !ok {
		return
	}
	checkShape(t, what+".explorerReport", m["explorerReport"], map[string]string{"id": kString, "name": kString})
	checkShape(t, what+".creator", m["creator"], map[string]string{"id": kString, "firstName": kString, "lastName": kString, "email": kString})
	ps, _ := m["plannings"].([]any)
	for i, p := range ps {
		checkShape(t, what+".plannings["+itoa(i)+"]", p, planningShape)
		if pm, ok := p.(map[string]any); ok {
			if pm["budgetId"] != m["id"] {
				t.Errorf("%s: planning budgetId %v, budget id %v", what, pm["budgetId"], m["id"])
			}
			if pm["targetType"] != "PLANNING_ITEM" {
				t.Errorf("%s: planning targetType %v", what, pm["targetType"])
			}
			for k, v := range pm["targetItems"].(map[string]any) {
				if _, ok := v.(float64); !ok {
					t.Errorf("%s: targetItems[%q] = %#v, want a number", what, k, v)
				}
			}
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// firstBudgetID returns the id of the key's first budget.
func firstBudgetID(t *testing.T, e *env, key string) string {
	t.Helper()
	ids := e.sim.IDs(key, "budgets")
	if len(ids) == 0 {
		t.Fatalf("no budgets for %s", key)
	}
	return ids[0]
}

// reportID returns the explorerReportId of the key's first budget.
func reportID(t *testing.T, e *env, key string) string {
	t.Helper()
	b := e.get(t, "/v1/budgets/"+firstBudgetID(t, e, key), key).dataObj(t)["budget"].(map[string]any)
	return b["explorerReportId"].(string)
}

// createBody is a valid budget create body for the key's organization.
func createBody(t *testing.T, e *env, key string) map[string]any {
	t.Helper()
	return map[string]any{
		"name":             "Test Budget",
		"startDate":        "2026-12-01",
		"numberOfPeriods":  12,
		"explorerReportId": reportID(t, e, key),
	}
}
