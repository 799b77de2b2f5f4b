package graph

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
)

// overHTTP adapts a gqlgen HTTP transport to the GraphQL-over-HTTP spec where
// gqlgen differs from it, for requests that fail before execution (parse,
// validation, variable coercion, limits):
//
//   - with application/json, such a request is well formed HTTP, so the spec
//     asks for 200 (gqlgen answers 422);
//   - with application/graphql-response+json, the answer must not have a data
//     entry at all (gqlgen writes "data": null).
type overHTTP struct{ graphql.Transport }

// Do runs the wrapped transport through a writer that makes the two fixes.
func (t overHTTP) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	cw := &compliantWriter{ResponseWriter: w}
	t.Transport.Do(cw, r, exec)
	cw.flush()
}

type compliantWriter struct {
	http.ResponseWriter
	status int
	held   *bytes.Buffer // the body of a request error, held to drop its data entry
}

func (cw *compliantWriter) WriteHeader(code int) {
	mt, _, _ := mime.ParseMediaType(cw.Header().Get("Content-Type"))
	switch {
	case code == http.StatusUnprocessableEntity && mt == "application/json":
		code = http.StatusOK
	case code >= 400 && mt == "application/graphql-response+json":
		cw.status = code
		cw.held = new(bytes.Buffer)
		return
	}
	cw.ResponseWriter.WriteHeader(code)
}

func (cw *compliantWriter) Write(b []byte) (int, error) {
	if cw.held != nil {
		return cw.held.Write(b)
	}
	return cw.ResponseWriter.Write(b)
}

func (cw *compliantWriter) flush() {
	if cw.held == nil {
		return
	}
	body := cw.held.Bytes()
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) == nil {
		if d, ok := m["data"]; ok && string(d) == "null" {
			delete(m, "data")
			if b, err := json.Marshal(m); err == nil {
				body = b
			}
		}
	}
	cw.ResponseWriter.WriteHeader(cw.status)
	_, _ = cw.ResponseWriter.Write(body)
}
