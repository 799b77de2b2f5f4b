package graph_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/costgw/gateway/upstream/sim"
)

// @defer over multipart/mixed, read by a real client library: urql runs
// the Explorer dashboard with its slow panels deferred and gets them in
// later parts, merged into one result (test/frontend/scripts/defer.mjs).
func TestDeferWithARealClient(t *testing.T) {
	t.Parallel()
	node, dir := nodePackages(t, "frontend", "@urql/core")
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	out, err := exec.Command(node, filepath.Join(dir, "scripts", "defer.mjs"), srv.URL+"/graphql", sim.DemoKey).CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), "defer: ok") {
		t.Fatalf("urql over @defer: %v", err)
	}
}

// A client that does not take multipart/mixed gets the whole result in one
// JSON answer, the same as without @defer.
func TestDeferWithoutMultipartIsOneAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const plain = `{ budgets(first: 3) { nodes { name metrics { variance } plannings { dimension1 } } } }`
	const deferred = `query { budgets(first: 3) { nodes { name ... @defer { metrics { variance } } ...Rows @defer(label: "rows") } } }
		fragment Rows on Budget { plannings { dimension1 } }`
	want := e.query(t, sim.DemoKey, plain, nil)
	got := e.query(t, sim.DemoKey, deferred, nil)
	if len(want.Errors)+len(got.Errors) > 0 || string(got.Data) != string(want.Data) {
		t.Errorf("with @defer, one answer:\n%s\nwithout:\n%s", got.raw, want.raw)
	}
}

// Nested @defer fragments end: each deferred field is delivered once, and
// the last part says hasNext false. Before, a field deferred twice under
// one label (nested fragments or siblings, without labels) was counted twice and delivered once, so the answer never ended:
// the request held its place in -requests-in-flight past its deadline,
// and 32 of them stopped the gateway.
func TestNestedDeferEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, q := range []string{
		`{ budgets(first: 1) { nodes { ... @defer { name ... @defer { metrics { totalTarget } } } } } }`,
		`{ budgets(first: 1) { nodes { ... @defer { metrics { totalTarget } } ... @defer { metrics { totalTarget } } } } }`,
		`{ budgets(first: 1) { nodes { ... @defer(label: "a") { name ... @defer(label: "b") { metrics { totalTarget } } } } } }`,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req := postReader(strings.NewReader(queryBody(q)), sim.DemoKey).WithContext(ctx)
		req.Header.Set("Accept", "multipart/mixed")
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		cancel()
		out := rec.Body.String()
		if !strings.HasSuffix(out, "--graphql--\r\n") || !strings.Contains(out, `"hasNext":false`) ||
			!strings.Contains(out, `{"metrics":{"totalTarget":`) {
			t.Errorf("%s\nanswered, by its deadline:\n%s", q, out)
		}
	}
}

// multipart/mixed is taken only when the Accept header names it with a q
// above 0: q=0 says "not this", and got a multipart answer all the same.
func TestDeferRefusedMultipartIsOneAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := []byte(queryBody(`{ budgets(first: 1) { nodes { name ... @defer { metrics { variance } } } } }`))
	for accept, multipart := range map[string]bool{
		"application/json, multipart/mixed;q=0":                false,
		"application/json, multipart/mixed; q=0.0":             false,
		"application/json, */*":                                false,
		"multipart/mixed;deferSpec=20220824, application/json": true,
		"application/json;q=0.9, multipart/mixed;q=0.1":        true,
		"Multipart/Mixed, application/json":                    true, // media types are case-insensitive
	} {
		req := postRequest(body, sim.DemoKey)
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if got := strings.HasPrefix(rec.Header().Get("Content-Type"), "multipart/mixed"); got != multipart {
			t.Errorf("Accept %q: Content-Type %q, want multipart %v", accept, rec.Header().Get("Content-Type"), multipart)
		}
	}
}

// @defer's labels are strings written in the document, each used once (the
// incremental delivery RFC's validation rule): two parts with one label
// could not be told apart. Both were accepted.
func TestDeferLabelsAreUnique(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, q := range []string{
		`{ budgets(first: 1) { nodes { ... @defer(label: "a") { name } ... @defer(label: "a") { status } } } }`,
		`query { budgets(first: 1) { nodes { ...A @defer(label: "a") ... @defer(label: "a") { status } } } } fragment A on Budget { name }`,
		`query($l: String) { budgets(first: 1) { nodes { ... @defer(label: $l) { name } } } }`,
	} {
		if r := e.queryAs(t, "application/graphql-response+json", sim.DemoKey, q, nil); r.status != 400 || r.code(t) != "GRAPHQL_VALIDATION_FAILED" {
			t.Errorf("%s: %d %s", q, r.status, r.raw)
		}
	}
	for _, q := range []string{
		`{ budgets(first: 1) { nodes { ... @defer(label: "a") { name } ... @defer(label: "b") { status } } } }`,
		// A label in a fragment is one use, however often the fragment is
		// spread or the validator walks it.
		`query { budgets(first: 1) { nodes { ...F } } } fragment F on Budget { ... @defer(label: "m") { metrics { variance } } }`,
		`query A { budgets(first: 1) { nodes { ...F } } } query B { budgets(first: 2) { nodes { ...F } } }
		fragment F on Budget { ... @defer(label: "m") { metrics { variance } } }`,
	} {
		body := queryBody(q)
		if strings.Contains(q, "query A") {
			body = bodyOf(map[string]any{"query": q, "operationName": "A"})
		}
		if r := e.post(t, body, "Authorization", "Bearer "+sim.DemoKey); len(r.Errors) > 0 || r.Data == nil {
			t.Errorf("%s: %s", q, r.raw)
		}
	}
}

// Each part of a multipart answer is followed at once by the delimiter that
// closes it, so that a client can use a part as soon as it arrives: Apollo
// Client takes a part as whole only when it sees the next delimiter. Before,
// a part's closing delimiter was written only when the next part began, so
// the first result showed only once the deferred data had come.
func TestDeferPartClosedAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	release := make(chan struct{})
	e.calls.mu.Lock()
	e.calls.fail = func(r *http.Request) *http.Response {
		if r.URL.Path == "/v1/explorer/history" {
			<-release // the deferred panel's data waits for the test
		}
		return nil
	}
	e.calls.mu.Unlock()
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	q := map[string]any{"dateRange": map[string]any{"start": "2026-10-01", "end": "2026-10-31"},
		"groupBy": "product_product_name", "costType": "line_item_unblended_cost", "granularity": "day", "filters": []any{}}
	body := bodyOf(map[string]any{"variables": map[string]any{"q": q}, "query": `query($q: ExplorerQueryInput!) {
		explorer { summary(query: $q) { cards { title } } ... @defer { history(query: $q) { costRows { cost } } } } }`})
	req, _ := http.NewRequest("POST", srv.URL+"/graphql", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "multipart/mixed;deferSpec=20220824")
	req.Header.Set("Authorization", "Bearer "+sim.DemoKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()

	// Read until the first part and the delimiter after it have come, while
	// the deferred data is held back; a bound on the wait, not a measure.
	got := make(chan string, 1)
	go func() {
		var seen []byte
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			seen = append(seen, buf[:n]...)
			// The opening delimiter, the first part, and the one after it.
			if bytes.Count(seen, []byte("--graphql\r\n")) >= 2 || err != nil {
				got <- string(seen)
				return
			}
		}
	}()
	select {
	case first := <-got:
		if !strings.HasPrefix(first, "--graphql\r\n") || !strings.HasSuffix(first, "}\r\n--graphql\r\n") || !strings.Contains(first, `"hasNext":true`) {
			t.Fatalf("the first part is not whole once it has come:\n%q", first)
		}
		// The deferred field is not in it: it is owed, not null (it was
		// "history":null, which clients read as an answer).
		if strings.Contains(first, `"history"`) || !strings.Contains(first, `{"data":{"explorer":{"summary":`) {
			t.Errorf("the first part holds the deferred field, or lacks the rest:\n%q", first)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatalf("the first part's closing delimiter did not come before the deferred data; then came:\n%q", <-got)
	}
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || !strings.HasSuffix(string(rest), `"hasNext":false}`+"\r\n--graphql--\r\n") || !strings.Contains(string(rest), `"incremental"`) {
		t.Errorf("the deferred part and the end: %v\n%q", err, rest)
	}
}
