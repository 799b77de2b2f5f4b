package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/generated"
)

// Persisted queries, two kinds:
//
//   - Automatic persisted queries (Apollo's protocol): a client sends
//     extensions.persistedQuery.sha256Hash without the query; an unknown hash
//     answers PERSISTED_QUERY_NOT_FOUND and the client sends query and hash
//     together, which registers the query once it has parsed, validated and
//     passed the limits, and only with a key (checkedAPQ). Queries are kept
//     in a store that the replicas may share (Options.PersistedQueries).
//   - Trusted documents: a manifest of the documents a build of the frontend
//     sends, as Relay's and graphql-codegen's client preset write it (a JSON
//     object of document id to document text; Apollo's persisted query
//     manifest is read too). A request names a document by documentId (the
//     GraphQL-over-HTTP proposal's parameter), doc_id (Relay's) or its
//     sha256Hash. With OnlyPersisted the gateway runs nothing else: a query
//     text not in the manifest answers PERSISTED_QUERY_NOT_IN_LIST, and
//     nothing registers.

// Manifest is a set of trusted documents: document id → document text.
type Manifest map[string]string

// ReadManifest reads a manifest file: a JSON object of id to text (Relay,
// graphql-codegen), or Apollo's persisted query manifest.
func ReadManifest(path string) (Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var apollo struct {
		Format     string `json:"format"`
		Operations []struct {
			ID   string `json:"id"`
			Body string `json:"body"`
		} `json:"operations"`
	}
	var m Manifest
	if json.Unmarshal(b, &apollo) == nil && apollo.Format == "apollo-persisted-query-manifest" {
		m = make(Manifest, len(apollo.Operations))
		for _, op := range apollo.Operations {
			m[op.ID] = op.Body
		}
	} else if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s is neither a JSON object of document id to document text nor an Apollo persisted query manifest: %w", path, err)
	}
	// Each document is checked against the schema now: one that does not
	// validate would fail every request that names it, and the operator
	// learn of it from the clients. The limits are a request's, and are
	// checked per request.
	schema := generated.NewExecutableSchema(generated.Config{}).Schema()
	for _, id := range slices.Sorted(maps.Keys(m)) {
		if id == "" || m[id] == "" {
			return nil, fmt.Errorf("%s has an empty document id or text", path)
		}
		doc, errs := gqlparser.LoadQuery(schema, m[id])
		if len(errs) > 0 {
			return nil, fmt.Errorf("%s: the document %q does not fit the schema: %s", path, id, errs[0].Message)
		}
		if len(doc.Operations) == 0 {
			return nil, fmt.Errorf("%s: the document %q has no operation", path, id)
		}
	}
	return m, nil
}

// trusted resolves trusted documents for the transport.
type trusted struct {
	docs   Manifest
	hashes map[string]string // sha256 of a document's text → its text
	only   bool
}

func newTrusted(m Manifest, only bool) *trusted {
	t := &trusted{docs: m, hashes: make(map[string]string, len(m)), only: only}
	for _, text := range m {
		t.hashes[sha256Hex(text)] = text
	}
	return t
}

func sha256Hex(s string) string {
	b := sha256.Sum256([]byte(s))
	return hex.EncodeToString(b[:])
}

// resolve fills p.Query from the manifest when the request names a trusted
// document, by documentId or by its persistedQuery hash; with only, it
// refuses a request that names none.
func (t *trusted) resolve(p *graphql.RawParams, documentID string) *requestError {
	if documentID != "" {
		text, ok := t.docs[documentID]
		if !ok {
			return &requestError{200, codes.Errorf(codes.PersistedQueryNotFound, "no trusted document has the id %q", documentID)}
		}
		p.Query = text
		return nil
	}
	if hash := apqHash(p.Extensions); hash != "" {
		if text, ok := t.hashes[hash]; ok {
			if p.Query != "" && p.Query != text {
				return &requestError{400, codes.Errorf(codes.BadRequest, "the query does not match its persistedQuery hash")}
			}
			p.Query = text
			delete(p.Extensions, "persistedQuery") // resolved: not for the APQ store
			return nil
		}
	}
	if t.only {
		if p.Query != "" && t.hashes[sha256Hex(p.Query)] != "" {
			return nil
		}
		return &requestError{400, codes.Errorf(codes.PersistedQueryNotInList,
			"this gateway runs only its trusted documents: name one by documentId")}
	}
	return nil
}

// apqHash is the sha256Hash of a request's persistedQuery extension, if any.
func apqHash(ext map[string]any) string {
	pq, _ := ext["persistedQuery"].(map[string]any)
	h, _ := pq["sha256Hash"].(string)
	return h
}

// apq is gqlgen's automatic persisted queries extension, with a code on
// every error it returns (its own set none but PERSISTED_QUERY_NOT_FOUND).
// Its store is a checkedAPQ, so that what it adds is only kept once the
// request has shown the query is one the gateway runs.
type apq struct {
	extension.AutomaticPersistedQuery
}

// newAPQ is the extension over store.
func newAPQ(store graphql.Cache[string]) apq {
	return apq{extension.AutomaticPersistedQuery{Cache: checkedAPQ{store}}}
}

// checkedAPQ is the store of automatic persisted queries as gqlgen's
// extension sees it. gqlgen adds a query as soon as its hash matches, before
// it is parsed, validated or limited and before the key is looked at: 100
// unparseable 30 KB queries without a key once went into Redis in 0.1 s, each
// for 24 hours. So Add only notes the query in the request's apqSlot, and
// the transport registers it (registerAPQ) once the document has parsed,
// validated and passed every limit, and the request has a key. A request
// without a key registers nothing: it may only introspect, and the tools
// that do send the whole query; the store is for the clients of the API.
type checkedAPQ struct{ store graphql.Cache[string] }

// apqSlot holds the query a request would register.
type apqSlot struct {
	store       graphql.Cache[string]
	hash, query string
}

type apqSlotKey struct{}

// withAPQSlot gives a request's context an apqSlot.
func withAPQSlot(ctx context.Context) context.Context {
	return context.WithValue(ctx, apqSlotKey{}, &apqSlot{})
}

// Get implements graphql.Cache.
func (c checkedAPQ) Get(ctx context.Context, hash string) (string, bool) {
	return c.store.Get(ctx, hash)
}

// Add implements graphql.Cache: it keeps the query for registerAPQ, and
// stores nothing itself. Without a slot (not a request of the transport),
// nothing is kept.
func (c checkedAPQ) Add(ctx context.Context, hash, query string) {
	if slot, _ := ctx.Value(apqSlotKey{}).(*apqSlot); slot != nil {
		*slot = apqSlot{store: c.store, hash: hash, query: query}
	}
}

// registerAPQ stores the query the request's apqSlot holds, if any: the
// transport calls it when the operation is about to run with a key.
func registerAPQ(ctx context.Context) {
	if slot, _ := ctx.Value(apqSlotKey{}).(*apqSlot); slot != nil && slot.store != nil {
		slot.store.Add(ctx, slot.hash, slot.query)
		*slot = apqSlot{}
	}
}

func (a apq) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	err := a.AutomaticPersistedQuery.MutateOperationParameters(ctx, p)
	if err != nil {
		if _, ok := err.Extensions["code"]; !ok {
			if err.Extensions == nil {
				err.Extensions = map[string]any{}
			}
			err.Extensions["code"] = string(codes.BadRequest)
		}
	}
	return err
}

// checkPersistedQuery says what is wrong with the shape of a persistedQuery
// extension, or returns "": gqlgen's extension reads a hash of another type
// as a hash it does not have (PERSISTED_QUERY_NOT_FOUND), where the request
// is malformed.
func checkPersistedQuery(pq any) string {
	m, ok := pq.(map[string]any)
	if !ok {
		return "extensions.persistedQuery must be an object with version and sha256Hash"
	}
	if h, ok := m["sha256Hash"].(string); !ok || len(h) != sha256.Size*2 || strings.Trim(h, "0123456789abcdef") != "" {
		return "extensions.persistedQuery.sha256Hash must be the SHA-256 hash of the query, in lowercase hexadecimal"
	}
	if !isOne(m["version"]) {
		return "extensions.persistedQuery.version must be 1, the only version of automatic persisted queries"
	}
	return ""
}

// isOne reports whether v, a JSON value as the transport decodes a
// request's parameters (numbers as json.Number), is the number 1.
func isOne(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	f, err := n.Float64()
	return err == nil && f == 1
}
