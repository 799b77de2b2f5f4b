package graph_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/upstream/sim"
)

func hashOf(q string) string {
	b := sha256.Sum256([]byte(q))
	return hex.EncodeToString(b[:])
}

func withTrusted(m graph.Manifest, only bool) envOption {
	return func(c *envConfig) { c.graph.TrustedDocuments, c.graph.OnlyPersisted = m, only }
}

// Apollo's automatic persisted queries: an unknown hash asks for the query;
// the query with its hash registers it; then the hash alone runs it, by
// POST or by GET.
func TestAutomaticPersistedQueries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const q = `query Names { budgets(first: 2) { nodes { name } } }`
	pq := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hashOf(q)}}
	auth := []string{"Authorization", "Bearer " + sim.DemoKey}

	if r := e.post(t, bodyOf(map[string]any{"extensions": pq}), auth...); r.code(t) != string(codes.PersistedQueryNotFound) || r.status != 200 {
		t.Fatalf("an unknown hash: %d %s", r.status, r.raw)
	}
	first := e.post(t, bodyOf(map[string]any{"query": q, "extensions": pq}), auth...)
	if len(first.Errors) > 0 {
		t.Fatalf("the query with its hash: %s", first.raw)
	}
	if r := e.post(t, bodyOf(map[string]any{"extensions": pq}), auth...); len(r.Errors) > 0 || string(r.Data) != string(first.Data) {
		t.Errorf("the hash alone: %s", r.raw)
	}
	ext, _ := json.Marshal(pq)
	req := httptest.NewRequest("GET", "/graphql?extensions="+url.QueryEscape(string(ext)), nil)
	req.Header.Set(auth[0], auth[1])
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if r := decode(t, rec); len(r.Errors) > 0 || string(r.Data) != string(first.Data) {
		t.Errorf("a GET with the hash: %d %s", rec.Code, rec.Body)
	}
}

// A malformed persistedQuery extension is a request that is not a GraphQL
// request: 400 BAD_REQUEST under either media type, as errors.md says of
// BAD_REQUEST. These were answered 200 under application/json, and a hash
// of another type than a string PERSISTED_QUERY_NOT_FOUND.
func TestMalformedPersistedQueryIsABadRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const q = `{ __typename }`
	pq := func(version, hash any) map[string]any {
		return map[string]any{"persistedQuery": map[string]any{"version": version, "sha256Hash": hash}}
	}
	for name, body := range map[string]map[string]any{
		"a hash that is not the query's": {"query": q, "extensions": pq(1, hashOf("other"))},
		"version 2":                      {"query": q, "extensions": pq(2, hashOf(q))},
		"no version":                     {"query": q, "extensions": map[string]any{"persistedQuery": map[string]any{"sha256Hash": hashOf(q)}}},
		"not an object":                  {"query": q, "extensions": map[string]any{"persistedQuery": "x"}},
		"a number for the hash":          {"extensions": pq(1, 5)},
		"a hash that is not hexadecimal": {"extensions": pq(1, "not a hash")},
	} {
		for _, accept := range []string{"application/json", "application/graphql-response+json"} {
			r := e.post(t, bodyOf(body), "Authorization", "Bearer "+sim.DemoKey, "Accept", accept)
			if r.status != 400 || r.code(t) != string(codes.BadRequest) {
				t.Errorf("%s, Accept %s: %d %s", name, accept, r.status, r.raw)
			}
		}
	}
	// Well formed, it registers and runs.
	if r := e.post(t, bodyOf(map[string]any{"query": q, "extensions": pq(1, hashOf(q))}),
		"Authorization", "Bearer "+sim.DemoKey); len(r.Errors) > 0 {
		t.Errorf("a well-formed extension: %s", r.raw)
	}
}

// Trusted documents are named by documentId, doc_id or their hash; with
// -only-persisted nothing else runs.
func TestTrustedDocuments(t *testing.T) {
	t.Parallel()
	const q = `query Names { budgets(first: 2) { nodes { name } } }`
	m := graph.Manifest{"names-v1": q}
	auth := []string{"Authorization", "Bearer " + sim.DemoKey}
	for _, only := range []bool{false, true} {
		e := newEnv(t, withTrusted(m, only))
		want := e.post(t, bodyOf(map[string]any{"documentId": "names-v1"}), auth...)
		if len(want.Errors) > 0 || len(want.Data) == 0 {
			t.Fatalf("only=%v: documentId: %s", only, want.raw)
		}
		for name, body := range map[string]map[string]any{
			"doc_id":          {"doc_id": "names-v1"},
			"persisted hash":  {"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hashOf(q)}}},
			"the text itself": {"query": q},
		} {
			if r := e.post(t, bodyOf(body), auth...); len(r.Errors) > 0 || string(r.Data) != string(want.Data) {
				t.Errorf("only=%v: %s: %s", only, name, r.raw)
			}
		}
		if r := e.post(t, bodyOf(map[string]any{"documentId": "nope"}), auth...); r.code(t) != string(codes.PersistedQueryNotFound) {
			t.Errorf("only=%v: an unknown documentId: %s", only, r.raw)
		}
		other := `{ budgets(first: 1) { nodes { id } } }`
		r := e.post(t, bodyOf(map[string]any{"query": other,
			"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hashOf(other)}}}), auth...)
		switch {
		case only && (r.code(t) != string(codes.PersistedQueryNotInList) || r.status != 400):
			t.Errorf("only: a query not in the manifest, registered as an APQ: %d %s", r.status, r.raw)
		case !only && len(r.Errors) > 0:
			t.Errorf("a query not in the manifest, without -only-persisted: %s", r.raw)
		}
	}
}

// The manifest formats: Relay's and graphql-codegen's JSON object, and
// Apollo's persisted query manifest.
func TestReadManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, body := range map[string]string{
		"relay.json": `{"a1": "query A { __typename }"}`,
		"apollo.json": `{"format": "apollo-persisted-query-manifest", "version": 1,
			"operations": [{"id": "a1", "name": "A", "type": "query", "body": "query A { __typename }"}]}`,
	} {
		m, err := graph.ReadManifest(write(name, body))
		if err != nil || m["a1"] != "query A { __typename }" {
			t.Errorf("%s: %v %v", name, m, err)
		}
	}
	// A document that does not fit the schema is refused at start, naming
	// it; it was loaded, and failed every request that named it.
	for name, body := range map[string]string{
		"a field the schema lacks": `{"a1": "query A { __typename }", "b2": "query B { noSuchField }"}`,
		"no operation":             `{"a1": "query A { __typename }", "b2": "  # nothing"}`,
	} {
		if _, err := graph.ReadManifest(write("stale.json", body)); err == nil || !strings.Contains(err.Error(), `"b2"`) {
			t.Errorf("a manifest with a document of %s: %v", name, err)
		}
	}
	for _, body := range []string{`[]`, `{"a": 1}`, `{"": "q"}`, `not json`} {
		if _, err := graph.ReadManifest(write("bad.json", body)); err == nil {
			t.Errorf("%s: no error", body)
		}
	}
}

// The trusted documents read the persistedQuery extension too: a malformed
// one is a bad request there as well, where version 2 with a trusted
// document's hash ran it, and a number for the hash under -only-persisted
// was PERSISTED_QUERY_NOT_IN_LIST.
func TestMalformedPersistedQueryWithTrustedDocuments(t *testing.T) {
	t.Parallel()
	const q = `query Names { budgets(first: 2) { nodes { name } } }`
	m := graph.Manifest{"names-v1": q}
	for _, only := range []bool{false, true} {
		e := newEnv(t, withTrusted(m, only))
		for name, pq := range map[string]any{
			"version 2":             map[string]any{"version": 2, "sha256Hash": hashOf(q)},
			"a number for the hash": map[string]any{"version": 1, "sha256Hash": 5},
		} {
			r := e.post(t, bodyOf(map[string]any{"extensions": map[string]any{"persistedQuery": pq}}), "Authorization", "Bearer "+sim.DemoKey)
			if r.status != 400 || r.code(t) != string(codes.BadRequest) {
				t.Errorf("only=%v, %s: %d %s", only, name, r.status, r.raw)
			}
		}
	}
}

// A request names its document once: a documentId with a query is a bad
// request, where the query was silently ignored for the trusted document;
// so are a documentId and a doc_id that differ, and a documentId with a
// persistedQuery hash, where doc_id, or the documentId, silently won.
func TestDocumentIDAndQueryTogetherIsABadRequest(t *testing.T) {
	t.Parallel()
	const q = `query Names { budgets(first: 2) { nodes { name } } }`
	m := graph.Manifest{"names-v1": q, "doc2": `{ __typename }`}
	other := `{ budgets(first: 1) { nodes { id } } }`
	for _, e := range []*env{newEnv(t), newEnv(t, withTrusted(m, false)), newEnv(t, withTrusted(m, true))} {
		for name, body := range map[string]map[string]any{
			"documentId and query":  {"documentId": "names-v1", "query": `{ __typename }`},
			"documentId and doc_id": {"documentId": "names-v1", "doc_id": "doc2"},
			"documentId and a hash": {"documentId": "names-v1",
				"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hashOf(other)}}},
		} {
			r := e.post(t, bodyOf(body), "Authorization", "Bearer "+sim.DemoKey)
			if r.status != 400 || r.code(t) != string(codes.BadRequest) {
				t.Errorf("%s: %d %s", name, r.status, r.raw)
			}
		}
		req := httptest.NewRequest("GET", "/graphql?documentId=names-v1&doc_id=doc2", nil)
		req.Header.Set("Authorization", "Bearer "+sim.DemoKey)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if r := decode(t, rec); r.status != 400 || r.code(t) != string(codes.BadRequest) {
			t.Errorf("GET with documentId and doc_id: %d %s", r.status, r.raw)
		}
	}
	// The same id twice names one document.
	e := newEnv(t, withTrusted(m, true))
	if r := e.post(t, bodyOf(map[string]any{"documentId": "names-v1", "doc_id": "names-v1"}), "Authorization", "Bearer "+sim.DemoKey); len(r.Errors) > 0 {
		t.Errorf("documentId and doc_id alike: %s", r.raw)
	}
}

// apqStore is a store of automatic persisted queries that records what is
// added to it.
type apqStore struct {
	mu    sync.Mutex
	added map[string]string
}

func (s *apqStore) Get(_ context.Context, hash string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.added[hash]
	return q, ok
}

func (s *apqStore) Add(_ context.Context, hash, query string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.added[hash] = query
}

// An automatic persisted query is registered only once it has parsed,
// validated and passed the limits, with a key; a request without a key
// registers nothing. gqlgen's extension stored every query whose hash
// matched, before anything else looked at it: 100 unparseable 30 KB
// queries without a key went into Redis in 0.1 s.
func TestAPQRegistersOnlyQueriesThatRun(t *testing.T) {
	t.Parallel()
	store := &apqStore{added: map[string]string{}}
	e := newEnv(t, func(c *envConfig) { c.graph.PersistedQueries = store })
	auth := []string{"Authorization", "Bearer " + sim.DemoKey}
	send := func(q string, header ...string) response {
		return e.post(t, bodyOf(map[string]any{"query": q,
			"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hashOf(q)}}}), header...)
	}
	refused := []struct {
		name, query string
		header      []string
	}{
		{"does not parse, with a key", "{ __typename " + strings.Repeat("x", 30<<10), auth},
		{"does not parse, without a key", "{ __typename #" + strings.Repeat("x", 30<<10), nil},
		{"does not validate", "{ nope }", auth},
		{"over a limit", "{ budgets(first: 500) { nodes { metrics { variance } actuals { total } } } }", auth},
		{"runs, without a key", "{ __typename } #" + strings.Repeat("x", 30<<10), nil},
	}
	for _, tc := range refused {
		send(tc.query, tc.header...)
		if len(store.added) != 0 {
			t.Errorf("%s: registered", tc.name)
			clear(store.added)
		}
	}
	// A mutation sent by GET is refused after validation.
	const m = `mutation { deleteBudget(input: {id: "x"}) { success } }`
	ext, _ := json.Marshal(map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hashOf(m)}})
	req := httptest.NewRequest("GET", "/graphql?query="+url.QueryEscape(m)+"&extensions="+url.QueryEscape(string(ext)), nil)
	req.Header.Set(auth[0], auth[1])
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != 405 {
		t.Fatalf("a mutation by GET: %d %s", rec.Code, rec.Body)
	}
	if len(store.added) != 0 {
		t.Errorf("a mutation by GET: registered")
		clear(store.added)
	}
	// The query without a key did run.
	if r := send("{ __typename }"); len(r.Errors) > 0 || len(store.added) != 0 {
		t.Errorf("without a key: %s, registered %d", r.raw, len(store.added))
	}
	// A query that runs with a key is registered, and its hash alone runs it.
	const q = `{ budgets(first: 1) { nodes { name } } }`
	if r := send(q, auth...); len(r.Errors) > 0 {
		t.Fatal(string(r.raw))
	}
	if store.added[hashOf(q)] != q || len(store.added) != 1 {
		t.Errorf("registered %v", store.added)
	}
	pq := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hashOf(q)}}
	if r := e.post(t, bodyOf(map[string]any{"extensions": pq}), auth...); len(r.Errors) > 0 {
		t.Errorf("the hash alone: %s", r.raw)
	}
}

// Every answer of the endpoint says no cache may keep it (Cache-Control:
// no-store, Vary: Authorization): the data is one organization's, chosen by
// the key and not the URL, so a CDN caching the GET of a persisted query's
// hash would hand it to another. A successful answer had neither, while
// errors said no-store.
func TestAnswersAreNotCacheable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const q = `query Names { budgets(first: 2) { nodes { name } } }`
	pq := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hashOf(q)}}
	ext, _ := json.Marshal(pq)
	e.post(t, bodyOf(map[string]any{"query": q, "extensions": pq}), "Authorization", "Bearer "+sim.DemoKey)
	request := func(method, target, body, key string, header ...string) *http.Request {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		if method == "POST" {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		return req
	}
	for _, tc := range []struct {
		name   string
		req    *http.Request
		status int
	}{
		{"a GET of a persisted query's hash", request("GET", "/graphql?extensions="+url.QueryEscape(string(ext)), "", sim.DemoKey), 200},
		{"a GET of a query", request("GET", "/graphql?query="+url.QueryEscape(q), "", sim.DemoKey), 200},
		{"a POST", request("POST", "/graphql", queryBody(q), sim.DemoKey), 200},
		{"introspection without a key", request("GET", "/graphql?query="+url.QueryEscape(`{ __schema { queryType { name } } }`), "", ""), 200},
		{"@defer, multipart", request("POST", "/graphql", queryBody(`{ ... @defer { budgets(first: 1) { nodes { name } } } }`), sim.DemoKey,
			"Accept", "multipart/mixed"), 200},
		{"no key", request("GET", "/graphql?query="+url.QueryEscape(q), "", ""), 401},
		{"a validation error", request("POST", "/graphql", queryBody(`{ nope }`), sim.DemoKey), 200},
		{"OPTIONS", request("OPTIONS", "/graphql", "", ""), 204},
	} {
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, tc.req)
		h := rec.Result().Header
		if rec.Code != tc.status || h.Get("Cache-Control") != "no-store" || !slices.Contains(h.Values("Vary"), "Authorization") {
			t.Errorf("%s: %d, Cache-Control %q, Vary %q", tc.name, rec.Code, h.Get("Cache-Control"), h.Values("Vary"))
		}
	}
}
