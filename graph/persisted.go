package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/codes"
)

// Persisted queries, two kinds:
//
//   - Automatic persisted queries (Apollo's protocol): a client sends
//     extensions.persistedQuery.sha256Hash without the query; an unknown hash
//     answers PERSISTED_QUERY_NOT_FOUND and the client sends query and hash
//     together, which registers the query. A GET with only the hash is small
//     enough for a CDN to cache. Queries are kept in a store that the
//     replicas may share (Options.PersistedQueries).
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
	if json.Unmarshal(b, &apollo) == nil && apollo.Format == "apollo-persisted-query-manifest" {
		m := make(Manifest, len(apollo.Operations))
		for _, op := range apollo.Operations {
			m[op.ID] = op.Body
		}
		return m, nil
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s is neither a JSON object of document id to document text nor an Apollo persisted query manifest: %w", path, err)
	}
	for id, text := range m {
		if id == "" || text == "" {
			return nil, fmt.Errorf("%s has an empty document id or text", path)
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
type apq struct {
	extension.AutomaticPersistedQuery
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
