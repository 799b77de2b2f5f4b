package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/graph/loaders"
	"github.com/costgw/gateway/upstream"
	"github.com/costgw/gateway/upstream/sim"
)

// env is a gateway on the simulator, as the default run has it, with a
// record of every upstream request the gateway made.
type env struct {
	sim   *sim.Server
	h     http.Handler
	calls *callLog
}

// callLog records upstream requests as "METHOD /path".
type callLog struct {
	mu    sync.Mutex
	calls []string
	next  http.RoundTripper
	// fail, when set, answers a request itself instead of the upstream.
	fail func(*http.Request) *http.Response
}

func (c *callLog) RoundTrip(r *http.Request) (*http.Response, error) {
	graph.CountUpstreamCall(r.Context())
	c.mu.Lock()
	c.calls = append(c.calls, r.Method+" "+r.URL.Path)
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		if resp := fail(r); resp != nil {
			return resp, nil
		}
	}
	return c.next.RoundTrip(r)
}

// take returns the requests recorded since the last take.
func (c *callLog) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

// editBudgetList makes the answers of listBudgets reach the gateway as edit
// leaves their records (data's objects, decoded), as an upstream that sent
// them so would have them.
func (e *env) editBudgetList(t testing.TB, edit func(records []any)) {
	e.calls.mu.Lock()
	defer e.calls.mu.Unlock()
	e.calls.fail = func(r *http.Request) *http.Response {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/budgets" {
			return nil
		}
		resp, err := e.calls.next.RoundTrip(r)
		if err != nil {
			t.Error(err)
			return nil
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Error(err)
			return nil
		}
		edit(body["data"].([]any))
		return answer(http.StatusOK, string(must(json.Marshal(body))))
	}
}

// envConfig is what an envOption may change.
type envConfig struct {
	sim             sim.Options
	client          []upstream.Option
	graph           graph.Options
	noIntrospection bool
}

type envOption func(*envConfig)

func withRetry(p upstream.RetryPolicy) envOption {
	return func(c *envConfig) { c.client = append(c.client, upstream.WithRetry(p)) }
}

func withLimits(l limits.Config) envOption {
	return func(c *envConfig) { c.graph.Limits = &l }
}

func withLogger(l *slog.Logger) envOption {
	return func(c *envConfig) { c.graph.Logger = l }
}

// withoutIntrospection serves no introspection (-introspection=false).
func withoutIntrospection() envOption {
	return func(c *envConfig) { c.noIntrospection = true }
}

func withLoaders(o loaders.Options) envOption {
	return func(c *envConfig) { c.graph.Loaders = o }
}

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	var cfg envConfig
	for _, o := range opts {
		o(&cfg)
	}
	s := sim.New(cfg.sim)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	log := &callLog{next: upstream.NewTransport()}
	co := append([]upstream.Option{upstream.WithHTTPClient(&http.Client{Transport: log, Timeout: 10 * time.Second})}, cfg.client...)
	c, err := upstream.NewClient(srv.URL+"/", co...)
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.graph
	g.Client, g.Introspection, g.CursorSecret = c, !cfg.noIntrospection, []byte("test")
	return &env{sim: s, calls: log, h: graph.NewHandler(g)}
}

// gqlError is one error of a GraphQL response.
type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

type response struct {
	status int
	header http.Header
	raw    []byte          // the body as it came
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

// code returns the extensions.code of the only error, failing otherwise.
func (r response) code(t testing.TB) string {
	t.Helper()
	if len(r.Errors) != 1 {
		t.Fatalf("want exactly one error, got %d: %+v", len(r.Errors), r.Errors)
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// decode reads a GraphQL response, failing the test if it is not JSON or
// carries an extensions.code that package codes does not register (and so
// docs/errors.md does not document).
func decode(t testing.TB, rec *httptest.ResponseRecorder) response {
	t.Helper()
	var r response
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatalf("response is not JSON (%d): %.300s", rec.Code, rec.Body)
	}
	r.status, r.header, r.raw = rec.Code, rec.Header(), rec.Body.Bytes()
	for _, e := range r.Errors {
		c, _ := e.Extensions["code"].(string)
		if _, ok := codes.Code(c).Info(); !ok {
			t.Errorf("error %q has the unregistered code %q", e.Message, c)
		}
	}
	return r
}

// postRequest is a POST of the JSON body to /graphql, with the bearer key
// unless it is empty.
func postRequest(body []byte, key string) *http.Request {
	return postReader(bytes.NewReader(body), key)
}

// postReader is postRequest of the body body reads (of an unknown length,
// unless body is a *bytes.Reader, *bytes.Buffer or *strings.Reader).
func postReader(body io.Reader, key string) *http.Request {
	req := httptest.NewRequest("POST", "/graphql", body)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req
}

// serve runs req through the handler and decodes the answer.
func (e *env) serve(t testing.TB, req *http.Request) response {
	t.Helper()
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return decode(t, rec)
}

// post sends body to the handler with the headers given as pairs.
func (e *env) post(t testing.TB, body string, header ...string) response {
	t.Helper()
	req := httptest.NewRequest("POST", "/graphql", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return e.serve(t, req)
}

// bodyOf encodes a request body of the given members.
func bodyOf(m map[string]any) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// queryBody is the JSON request body of query q alone.
func queryBody(q string) string {
	return bodyOf(map[string]any{"query": q})
}

// query posts a GraphQL request through the real handler and middleware.
func (e *env) query(t testing.TB, key, query string, vars map[string]any) response {
	t.Helper()
	return e.queryAs(t, "", key, query, vars)
}

// queryAs is query with the Accept header accept, none if empty (under
// application/graphql-response+json a request error has its 4xx status).
func (e *env) queryAs(t testing.TB, accept, key, query string, vars map[string]any) response {
	t.Helper()
	return e.queryRequest(t, context.Background(), accept, key, query, vars)
}

// queryRequest is queryAs under ctx.
func (e *env) queryRequest(t testing.TB, ctx context.Context, accept, key, query string, vars map[string]any) response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req := postRequest(body, key).WithContext(ctx)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	r := e.serve(t, req)
	if strings.Contains(string(r.raw), key+"\"") && key != "" {
		t.Fatalf("response contains the bearer key: %s", r.raw)
	}
	return r
}

// mustQuery is query that fails the test on any GraphQL error, and decodes data into out.
func (e *env) mustQuery(t testing.TB, key, query string, vars map[string]any, out any) {
	t.Helper()
	r := e.query(t, key, query, vars)
	r.mustData(t, out)
}

// mustData fails the test if r carries any GraphQL error, and decodes its
// data into out unless out is nil.
func (r response) mustData(t testing.TB, out any) {
	t.Helper()
	if len(r.Errors) > 0 {
		t.Fatalf("errors: %+v", r.Errors)
	}
	if out != nil {
		if err := json.Unmarshal(r.Data, out); err != nil {
			t.Fatalf("decode data: %v: %s", err, r.Data)
		}
	}
}
