package graph_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/internal/introspection"
	"github.com/costgw/gateway/graph/limits"
	"github.com/costgw/gateway/internal/testlog"
	"github.com/costgw/gateway/upstream/sim"
)

// Tests of hostile requests: each is answered with a typed error, or with
// its data, at a cost in proportion to its size. They are regression tests
// of what a request could do to the gateway before.

// allocated is the memory the process allocates while f runs. Tests that
// use it do not run in parallel, so the figure is f's own (and the little
// that idle goroutines of earlier tests add).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// fanOut is 26 fragments that each spread the next one twice: 2^26 copies
// of the last one's field when expanded naively.
func fanOut() string {
	var b strings.Builder
	b.WriteString("query { ...F0 }")
	for i := range 26 {
		fmt.Fprintf(&b, " fragment F%d on Query { ...F%d ...F%d }", i, i+1, i+1)
	}
	b.WriteString(" fragment F26 on Query { __typename }")
	return b.String()
}

// The limits visit each fragment once: the fan-out document costs what its
// size does, with every limit on and with every limit off. (It took 6.9 s
// and 1.2 GB before.)
func TestFragmentFanOutCostsItsSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		lim  limits.Config
	}{{"defaults", limits.Defaults()}, {"no limits", limits.Config{}}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withLimits(tc.lim))
			var r response
			n := allocated(func() { r = e.post(t, queryBody(fanOut()), "Authorization", "Bearer "+sim.DemoKey) })
			if len(r.Errors) > 0 || string(r.Data) != `{"__typename":"Query"}` {
				t.Errorf("answer %d: %s", r.status, r.raw)
			}
			if n > 32<<20 {
				t.Errorf("the request allocated %d MB", n>>20)
			}
		})
	}
}

// Documents whose validation would be quadratic are refused before it runs,
// by a measure taken on the parsed document: 15 000 __typename took 11 s of
// validation before.
func TestQuadraticValidationIsRefusedFirst(t *testing.T) {
	e := newEnv(t)
	same := func(n int, s string) string { return strings.Repeat(s+" ", n) }
	binary := "a: __typename"
	for range 9 {
		binary = "a: budgets { " + binary + " } a: budgets { " + binary + " }"
	}
	for _, tc := range []struct{ name, query string }{
		{"14 998 __typename", "{ " + same(14998, "__typename") + "}"},
		{"1 000 aliases of one field", "{ " + same(1000, "a: __typename") + "}"},
		{"a tree of one response name", "{ " + binary + " }"},
		{"200 fragments in one selection", "{ " + func() string {
			var b strings.Builder
			for i := range 200 {
				fmt.Fprintf(&b, "...F%d ", i)
			}
			b.WriteString("} ")
			for i := range 200 {
				fmt.Fprintf(&b, "fragment F%d on Query { f%d: __typename } ", i, i)
			}
			return b.String()
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r response
			n := allocated(func() { r = e.post(t, queryBody(tc.query), "Authorization", "Bearer "+sim.DemoKey) })
			if c := r.code(t); c != string(codes.MaxSelections) {
				t.Errorf("code %s (%s), want %s", c, r.raw, codes.MaxSelections)
			}
			if n > 32<<20 {
				t.Errorf("the request allocated %d MB", n>>20)
			}
		})
	}
	// The largest document a tool sends passes with room to spare.
	r := e.post(t, queryBody(introspection.Query), "Authorization", "Bearer "+sim.DemoKey)
	if len(r.Errors) > 0 {
		t.Errorf("GraphiQL's introspection query: %s", r.raw)
	}
}

// Each hostile body costs the handler a small multiple of its size in
// allocation, and is refused before the work it would make dear: the
// documents over a limit are refused from their text, before they are
// parsed (tokens-15000 allocated 5.3 MB for a body of 165 KB, 32 times its
// size), a body is read once, decoded without a copy but its strings, a
// comment is not walked by the parser, and a JSON value nested 9 997 deep
// is refused before it is decoded (2 MB).
func TestHostileBodiesCostTheirSize(t *testing.T) {
	e := newEnv(t)
	limit := int(graph.DefaultMaxBodyBytes)
	fill := func(head, tail string, c string) string {
		return head + strings.Repeat(c, limit-1-len(head)-len(tail)) + tail
	}
	deep := strings.Repeat("[", 9997) + strings.Repeat("]", 9997)
	idsHead, idsTail := `{"query": "query($ids: [ID!]!) { nodes(ids: $ids) { id } }", "variables": {"ids": [1`, `]}}`
	ids := idsHead + strings.Repeat(",1", (limit-1-len(idsHead)-len(idsTail))/2) + idsTail
	// A variable is one value however many times the document names it:
	// [$x, $x, …] on a 60 KB string stands for 60 MB of JSON at 1 000
	// names (and 1.1 GB of memory at 5 000), which was built before its
	// size was checked. What the bounds below leave is the parsing of the
	// list in the document, about 90 bytes a byte.
	named := func(n int) string { return strings.TrimSuffix(strings.Repeat("$x, ", n), ", ") }
	x := `"variables": {"x": "` + strings.Repeat("A", 60_000) + `"}}`
	growthBomb := `{"query": "mutation($x: JSON) { updateBudget(input: {id: \"QnVkZ2V0OjE=\", growthRate: [` + named(1000) +
		`]}) { budget { id } } }", ` + x
	filterBomb := `{"query": "query($x: JSON!) { explorer { summary(query: {dateRange: {start: \"2026-01-01\", end: \"2026-01-31\"}, ` +
		`groupBy: \"billing_account_name\", costType: \"line_item_unblended_cost\", granularity: \"day\", filters: [` + named(400) + `]}) { servedFromCache } } }", ` + x
	for _, tc := range []struct {
		name, body string
		code       codes.Code // "" for data
		most       float64    // allocation per byte of the body
	}{
		// A body's buffer grows as the body arrives, from 16 KiB, rather
		// than being made the size its Content-Length announces before any
		// of it has: a body over 16 KiB costs about half its size more.
		{"tokens-15000", queryBody("{" + strings.Repeat(" __typename", 14998) + " }"), codes.MaxSelections, 4},
		{"typename-15000", queryBody("{" + strings.Repeat(" __typename", 15000) + " }"), codes.MaxTokens, 3},
		{"comment-padded at the limit", fill(`{"query":"# `, `\n{ __typename }"}`, "#"), "", 3},
		{"comment at the end at the limit", fill(`{"query":"{ __typename } # `, `"}`, "#"), "", 3},
		{"string at the limit", fill(`{"query":"{ budget(id: \"`, `\") { id } }"}`, "x"), codes.BadUserInput, 4},
		{"malformed at the limit", fill(`{"query": "{ __typename }", "pad": "`, ``, "x"), codes.BadRequest, 2.5},
		{"deep-json", `{"query": "mutation($g: JSON) { updateBudget(input: {id: \"QnVkZ2V0OjE=\", growthRate: $g}) { budget { id } } }",` +
			`"variables": {"g": ` + deep + `}}`, codes.BadUserInput, 3},
		// The cost estimate once read every ID of nodes(ids:) as each type
		// node refetches: 370 MB for a body of 262 000 integers; then
		// gqlparser and gqlgen coerced each (90 MB), then the body's decoder
		// built the list (27 MB). A list of more than 1 000 values is now
		// refused as the body is checked.
		{"integer ids at the limit", ids, codes.BadUserInput, 3},
		{"a JSON variable named 1 000 times", growthBomb, codes.BadUserInput, 8},
		// Each filter is within its own bound; 400 of them were 24 MB sent
		// upstream. Four are encoded before the request's budget is spent:
		// about 120 KB each with encoding/json's buffer, and up to 300 KB
		// each when its pool of buffers has none to lend (under the race
		// detector sync.Pool drops what it is given at random: 17.8 bytes
		// a byte in CI).
		{"a JSON variable named 400 times as filters", filterBomb, codes.BadUserInput, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r response
			n := allocated(func() { r = e.post(t, tc.body, "Authorization", "Bearer "+sim.DemoKey) })
			switch {
			case tc.code == "" && (len(r.Errors) > 0 || string(r.Data) != `{"__typename":"Query"}`):
				t.Errorf("answer %d: %.300s", r.status, r.raw)
			case tc.code != "" && r.code(t) != string(tc.code):
				t.Errorf("code %s, want %s: %.300s", r.code(t), tc.code, r.raw)
			}
			t.Logf("%d bytes allocated, %.2f per byte of the body", n, float64(n)/float64(len(tc.body)))
			if per := float64(n) / float64(len(tc.body)); per > tc.most {
				t.Errorf("the request allocated %d bytes, %.1f per byte of its body of %d; at most %.1f", n, per, len(tc.body), tc.most)
			}
		})
	}
}

// What the endpoint cannot serve gets the GraphQL error shape with a code,
// a JSON media type and the right status, and never the request back.
func TestMalformedRequestsAreTyped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const marker = "ECHO-MARKER"
	auth := "Bearer " + sim.DemoKey
	for _, tc := range []struct {
		name, method, contentType, body string
		header                          []string
		status                          int
		code                            codes.Code
		allow                           string
	}{
		{"malformed JSON", "POST", "application/json", `{"query": "{ __typename }", ` + marker, nil, 400, codes.BadRequest, ""},
		{"trailing data", "POST", "application/json", `{"query": "{ __typename }"} {"` + marker + `": 1}`, nil, 400, codes.BadRequest, ""},
		{"not an object", "POST", "application/json", `["` + marker + `"]`, nil, 400, codes.BadRequest, ""},
		{"query of the wrong type", "POST", "application/json", `{"query": ["` + marker + `"]}`, nil, 400, codes.BadRequest, ""},
		{"variables of the wrong type", "POST", "application/json", `{"query": "{ __typename }", "variables": "` + marker + `"}`, nil, 400, codes.BadRequest, ""},
		{"no query", "POST", "application/json", `{"variables": {}}`, nil, 400, codes.BadRequest, ""},
		{"unsupported media type", "POST", "text/plain", `{"query": "{ __typename }"}`, nil, 415, codes.UnsupportedMediaType, ""},
		// JSON is UTF-8, and the gateway decodes no content coding: these
		// were read as UTF-8 and as JSON as they were, Latin-1's é made U+FFFD.
		{"another charset", "POST", "application/json; charset=iso-8859-1", `{"query": "{ __typename }"}`, nil, 415, codes.UnsupportedMediaType, ""},
		{"a content coding", "POST", "application/json", `{"query": "{ __typename }"}`, []string{"Content-Encoding", "gzip"}, 415, codes.UnsupportedMediaType, ""},
		{"a content coding on a second line", "POST", "application/json", `{"query": "{ __typename }"}`,
			[]string{"Content-Encoding", "identity", "Content-Encoding", "gzip"}, 415, codes.UnsupportedMediaType, ""},
		{"charset utf-8", "POST", "application/json; charset=UTF-8", `{"query": "{ __typename }"}`, nil, 200, "", ""},
		{"identity coding", "POST", "application/json", `{"query": "{ __typename }"}`, []string{"Content-Encoding", "identity"}, 200, "", ""},
		{"large body within the limit", "POST", "application/json", `{"query": "{ __typename }", "pad": "` + marker + strings.Repeat("x", 500_000) + `"}`, nil, 200, "", ""},
		{"body of 1.9 MB", "POST", "application/json", `{"query": "{ __typename }", "pad": "` + marker + strings.Repeat("x", 1_900_000) + `"}`, nil, 413, codes.RequestTooLarge, ""},
		{"body over the limit", "POST", "application/json", `{"query": "` + marker + strings.Repeat("x", 2_000_001) + `"}`, nil, 413, codes.RequestTooLarge, ""},
		{"wrong method", "PUT", "application/json", `{"query": "{ __typename }"}`, nil, 405, codes.MethodNotAllowed, "GET, POST, OPTIONS"},
		{"mutation over GET", "GET", "", "", nil, 405, codes.MethodNotAllowed, "POST"},
		{"two Authorization headers", "POST", "application/json", `{"query": "{ __typename }"}`, []string{"Authorization", "Bearer " + sim.OtherOrgKey}, 400, codes.BadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := "/graphql"
			if tc.method == "GET" {
				url += "?query=" + strings.ReplaceAll("mutation { deleteBudget(input: {id: \"x\"}) { success } }", " ", "+")
			}
			req := httptest.NewRequest(tc.method, url, strings.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			req.Header.Set("Authorization", auth)
			for i := 0; i+1 < len(tc.header); i += 2 {
				req.Header.Add(tc.header[i], tc.header[i+1])
			}
			rec := httptest.NewRecorder()
			e.h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d: %.300s", rec.Code, tc.status, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" && ct != "application/graphql-response+json" {
				t.Errorf("Content-Type %q", ct)
			}
			if strings.Contains(rec.Body.String(), marker) || rec.Body.Len() > 4096 {
				t.Errorf("the answer echoes the request (%d bytes): %.300s", rec.Body.Len(), rec.Body)
			}
			if tc.allow != "" && rec.Header().Get("Allow") != tc.allow {
				t.Errorf("Allow %q, want %q", rec.Header().Get("Allow"), tc.allow)
			}
			r := decode(t, rec)
			if tc.code != "" && r.code(t) != string(tc.code) {
				t.Errorf("code %s, want %s", r.code(t), tc.code)
			}
		})
	}
}

// A request that names a parameter twice is a bad request, POST or GET:
// which one wins is the reader's choice, and a proxy that read one could
// pass what the gateway, reading the other, runs. The gateway ran the last
// of a body's and the first of a query string's.
func TestRepeatedParametersAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, body := range []string{
		`{"query": "{ __typename }", "query": "mutation { __typename }"}`,
		`{"query": "query A { __typename } query B { __typename }", "operationName": "A", "operationName": "B"}`,
		`{"query": "{ __typename }", "variables": {}, "variables": {"a": 1}}`,
		`{"query": "{ __typename }", "extensions": null, "extensions": {}}`,
		// A reader built on encoding/json takes Query for query, and the
		// gateway ignored it: the same two readings.
		`{"query": "{ __typename }", "Query": "mutation { __typename }"}`,
	} {
		if r := e.post(t, body, "Authorization", "Bearer "+sim.DemoKey); r.status != 400 || r.code(t) != string(codes.BadRequest) {
			t.Errorf("%s: %d %s", body, r.status, r.raw)
		}
	}
	for _, q := range []string{
		"query=%7B__typename%7D&query=mutation%7B__typename%7D",
		"query=%7B__typename%7D&operationName=A&operationName=B",
		"query=%7B__typename%7D&variables=%7B%7D&variables=%7B%7D",
	} {
		req := httptest.NewRequest("GET", "/graphql?"+q, nil)
		req.Header.Set("Authorization", "Bearer "+sim.DemoKey)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if r := decode(t, rec); rec.Code != 400 || r.code(t) != string(codes.BadRequest) {
			t.Errorf("GET %s: %d %s", q, rec.Code, rec.Body)
		}
	}
}

// Without a key, a request can only introspect the schema, and is read
// only up to NoKeyMaxBodyBytes: it costs close to nothing.
func TestRequestsWithoutAKeyCostLittle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	big := `{"query": "{ __typename }", "pad": "` + strings.Repeat("x", 40<<10) + `"}`
	if r := e.post(t, big); r.status != http.StatusRequestEntityTooLarge || r.code(t) != string(codes.RequestTooLarge) {
		t.Errorf("40 KB without a key: %d %s", r.status, r.raw)
	}
	if r := e.post(t, big, "Authorization", "Bearer "+sim.DemoKey); len(r.Errors) > 0 {
		t.Errorf("40 KB with a key: %s", r.raw)
	}
	req := httptest.NewRequest("GET", "/graphql?query="+strings.Repeat("%20", 40<<10)+"{__typename}", nil)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestURITooLong {
		t.Errorf("a 120 KB query string without a key: %d", rec.Code)
	}
	if calls := e.calls.take(); len(calls) > 0 {
		t.Errorf("upstream calls: %v", calls)
	}
}

// A JSON input nested thousands deep is refused with BAD_USER_INPUT, not
// stored; a deep JSON value from the upstream fails its own field only.
func TestHostileJSONValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := loadFixture(t, e)
	deep := strings.Repeat("[", 9997) + strings.Repeat("]", 9997)
	body := `{"query": "mutation($in: UpdateBudgetInput!) { updateBudget(input: $in) { budget { id } } }",` +
		`"variables": {"in": {"id": "` + f.budgetGID + `", "growthRate": ` + deep + `}}}`
	r := e.post(t, body, "Authorization", "Bearer "+sim.DemoKey)
	if r.code(t) != string(codes.BadUserInput) {
		t.Errorf("a growthRate 9 997 deep: %.300s", r.raw)
	}

	// The upstream answers one budget with a growthRate 40 deep.
	e.calls.mu.Lock()
	e.calls.fail = func(req *http.Request) *http.Response {
		if req.Method != "GET" || req.URL.Path != "/v1/budgets" {
			return nil
		}
		resp, err := e.calls.next.RoundTrip(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		var page map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
			panic(err)
		}
		var v any = 1.0
		for range 40 {
			v = []any{v}
		}
		page["data"].([]any)[0].(map[string]any)["growthRate"] = v
		b, _ := json.Marshal(page)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Del("Content-Length")
		return resp
	}
	e.calls.mu.Unlock()
	r = e.query(t, sim.DemoKey, `{ budgets(first: 2) { nodes { name growthRate } } }`, nil)
	var got struct {
		Budgets struct{ Nodes []struct{ Name string } }
	}
	if err := json.Unmarshal(r.Data, &got); err != nil || r.status != 200 || len(got.Budgets.Nodes) != 2 || got.Budgets.Nodes[1].Name == "" {
		t.Fatalf("answer %d: %.500s", r.status, r.raw)
	}
	if r.code(t) != string(codes.UpstreamBadResponse) || fmt.Sprint(r.Errors[0].Path) != "[budgets nodes 0 growthRate]" {
		t.Errorf("errors: %+v", r.Errors)
	}
}

// A panic in a resolver or a loader is logged once, with its stack and the
// operation's name, and answered INTERNAL without either.
func TestPanicsAreLoggedOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, path, query string }{
		{"resolver", "/v1/budgets", `query Names { budgets(first: 1) { nodes { name } } }`},
		{"loader", "/actuals", `query Actuals { budgets(first: 1) { nodes { actuals { total } plannings { actuals { amount } } } } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logs := &testlog.Buffer{}
			e := newEnv(t, withLogger(slog.New(slog.NewJSONHandler(logs, nil))))
			e.calls.mu.Lock()
			e.calls.fail = func(r *http.Request) *http.Response {
				if strings.HasSuffix(r.URL.Path, tc.path) {
					panic("boom " + rawMarker)
				}
				return nil
			}
			e.calls.mu.Unlock()
			r := e.query(t, sim.DemoKey, tc.query, nil)
			if len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != string(codes.Internal) || strings.Contains(string(r.raw), rawMarker) {
				t.Errorf("answer: %s", r.raw)
			}
			var panics []map[string]any
			for _, l := range logs.JSONLines(t) {
				if strings.HasPrefix(fmt.Sprint(l["msg"]), "panic") {
					panics = append(panics, l)
				}
			}
			if len(panics) != 1 || !strings.Contains(fmt.Sprint(panics[0]["stack"]), "goroutine") {
				t.Fatalf("panic lines: %v", panics)
			}
			if tc.name == "resolver" && panics[0]["operation"] != "Names" {
				t.Errorf("the panic line names operation %v", panics[0]["operation"])
			}
		})
	}
}

// serviceClientId is the contract's 64-bit integer, written as a string.
func TestServiceClientIDIsInt64(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.query(t, sim.DemoKey, `{ budgets(first: 1) { nodes { serviceClientId } } }`, nil)
	if string(r.Data) != `{"budgets":{"nodes":[{"serviceClientId":"1001"}]}}` {
		t.Errorf("data: %s", r.Data)
	}
}

// A body of unknown length (chunked) is read up to the limit, and refused
// past it, as one whose Content-Length says so.
func TestBodyOfUnknownLength(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name   string
		body   string
		status int
	}{
		{"within the limit", queryBody("{ __typename }" + strings.Repeat(" ", 300_000)), 200},
		{"over the limit", queryBody("{ __typename }" + strings.Repeat(" ", int(graph.DefaultMaxBodyBytes))), 413},
	} {
		if r := e.serve(t, postReader(io.MultiReader(strings.NewReader(tc.body)), sim.DemoKey)); r.status != tc.status || (tc.status == 200 && string(r.Data) != `{"__typename":"Query"}`) {
			t.Errorf("%s: %d %.200s", tc.name, r.status, r.raw)
		}
	}
}
