package graph

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/upstream"
)

// NoKeyMaxBodyBytes bounds the body (or a GET's query string) of a request
// without an API key: such a request can only introspect the schema, and
// the largest introspection query a tool sends is a few kilobytes.
const NoKeyMaxBodyBytes = 32 << 10

// httpTransport serves GraphQL over HTTP as the GraphQL-over-HTTP spec has
// it: GET (queries only) and POST with a JSON body, answered as
// application/graphql-response+json when the client accepts it and as
// application/json otherwise. It replaces gqlgen's GET and POST transports
// to answer every malformed request itself, with the GraphQL error shape, a
// code and a JSON media type, never echoing the request; to write answers
// without re-encoding the data the executor already wrote; and to decide
// what a request without a key may do before any of it runs.
type httpTransport struct {
	maxBody int64
	trusted *trusted      // trusted documents; nil: none
	ops     chan struct{} // a slot per operation executing (Options.MaxOperations); nil: no bound
}

// admit waits until the operation may execute: a slot of t.ops is free or
// there is no bound. It returns the release of the slot, or false when ctx
// ended first. The operation keeps its slot until its answer is made (the
// last part of an incremental one written), not while a slow client reads a
// complete answer.
func (t httpTransport) admit(ctx context.Context) (release func(), ok bool) {
	if t.ops == nil {
		return func() {}, true
	}
	select {
	case t.ops <- struct{}{}:
	default:
		select {
		case t.ops <- struct{}{}:
		case <-ctx.Done():
			return nil, false
		}
	}
	released := false
	return func() {
		if !released {
			released = true
			<-t.ops
		}
	}, true
}

var _ graphql.Transport = httpTransport{}

// Supports implements graphql.Transport: every request gets its answer
// here, an error for the methods and media types the endpoint does not take.
func (httpTransport) Supports(*http.Request) bool { return true }

// requestError is a request the transport refuses, with its HTTP status.
type requestError struct {
	status int
	err    *codes.Error
}

func refuse(status int, code codes.Code, msg string) *requestError {
	return &requestError{status, &codes.Error{Code: code, Message: msg}}
}

// Do implements graphql.Transport.
func (t httpTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	if r.Method == http.MethodOptions {
		w.Header().Set("Allow", "GET, POST, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	ctx := r.Context()
	_, hasKey := upstream.APIKeyFrom(ctx)
	params, docID, rerr := t.params(w, r, hasKey)
	if rerr == nil && t.trusted != nil {
		rerr = t.trusted.resolve(params, docID)
	} else if rerr == nil && docID != "" {
		rerr = &requestError{200, codes.Errorf(codes.PersistedQueryNotFound, "this gateway has no trusted documents")}
	}
	if rerr != nil {
		refuseRequest(w, r, rerr.status, rerr.err)
		return
	}
	media := codes.MediaType(r)
	params.Headers = r.Header
	rc, list := exec.CreateOperationContext(ctx, params)
	if list != nil {
		resp := exec.DispatchError(graphql.WithOperationContext(ctx, rc), list)
		InfoFrom(ctx).answer(resp.Errors)
		writeResponse(w, media, requestErrorStatus(list, media), resp, false)
		return
	}
	if r.Method == http.MethodGet && rc.Operation.Operation != ast.Query {
		w.Header().Set("Allow", http.MethodPost)
		refuseRequest(w, r, http.StatusMethodNotAllowed,
			codes.Errorf(codes.MethodNotAllowed, "a %s must be sent with POST", rc.Operation.Operation))
		return
	}
	if !hasKey && !introspectionOnly(rc) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="costgw"`)
		refuseRequest(w, r, http.StatusUnauthorized,
			codes.Errorf(codes.Unauthenticated, "an API key is required in the Authorization header"))
		return
	}
	multipart := acceptsMultipart(r)
	if !multipart {
		withoutDefer(rc)
	}
	release, admitted := t.admit(ctx)
	if !admitted {
		refuseRequest(w, r, http.StatusGatewayTimeout, codes.Errorf(codes.RequestTimeout, "the request ended before its answer was ready"))
		return
	}
	defer release()
	responses, ctx := exec.DispatchOperation(ctx, rc)
	first := responses(ctx)
	if !multipart || !hasNext(first) {
		release()
	}
	switch {
	case first == nil:
		refuseRequest(w, r, http.StatusGatewayTimeout, codes.Errorf(codes.RequestTimeout, "the request ended before its answer was ready"))
	case multipart && hasNext(first):
		InfoFrom(ctx).answer(first.Errors)
		writeIncremental(ctx, w, first, responses)
	default:
		InfoFrom(ctx).answer(first.Errors)
		writeResponse(w, media, http.StatusOK, first, true)
	}
}

// params reads the request's GraphQL parameters and the trusted document
// it names, if any, or says why it cannot.
func (t httpTransport) params(w http.ResponseWriter, r *http.Request, hasKey bool) (*graphql.RawParams, string, *requestError) {
	if len(r.Header.Values("Authorization")) > 1 {
		return nil, "", refuse(http.StatusBadRequest, codes.BadRequest, "send the API key in one Authorization header")
	}
	limit := t.maxBody
	if !hasKey {
		limit = min(limit, NoKeyMaxBodyBytes)
	}
	switch r.Method {
	case http.MethodGet:
		if int64(len(r.URL.RawQuery)) > limit {
			return nil, "", refuse(http.StatusRequestURITooLong, codes.RequestTooLarge, tooLarge("query string", limit, hasKey))
		}
		return paramsFromURL(r.URL)
	case http.MethodPost:
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			return nil, "", refuse(http.StatusUnsupportedMediaType, codes.UnsupportedMediaType, "send the request as Content-Type: application/json")
		}
		if r.ContentLength > limit {
			return nil, "", refuse(http.StatusRequestEntityTooLarge, codes.RequestTooLarge, tooLarge("body", limit, hasKey))
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, "", refuse(http.StatusRequestEntityTooLarge, codes.RequestTooLarge, tooLarge("body", limit, hasKey))
		}
		if err != nil {
			return nil, "", refuse(http.StatusBadRequest, codes.BadRequest, "the request body could not be read")
		}
		return paramsFromBody(body)
	}
	w.Header().Set("Allow", "GET, POST, OPTIONS")
	return nil, "", refuse(http.StatusMethodNotAllowed, codes.MethodNotAllowed, "send GraphQL with GET or POST")
}

func tooLarge(what string, limit int64, hasKey bool) string {
	msg := "the request " + what + " is larger than " + strconv.FormatInt(limit, 10) + " bytes"
	if !hasKey {
		msg += " (the bound without an API key)"
	}
	return msg
}

// postBody is a POST body's members; each is refused when of another type.
// A trusted document is named by documentId (the GraphQL-over-HTTP
// proposal's parameter) or doc_id (Relay's).
type postBody struct {
	Query         *string         `json:"query"`
	OperationName *string         `json:"operationName"`
	Variables     json.RawMessage `json:"variables"`
	Extensions    json.RawMessage `json:"extensions"`
	DocumentID    *string         `json:"documentId"`
	DocID         *string         `json:"doc_id"`
}

// paramsFromBody decodes a POST body: exactly one JSON object, with a
// string query, and the other members of their types or null. Errors say
// what is wrong, never what was sent.
func paramsFromBody(body []byte) (*graphql.RawParams, string, *requestError) {
	bad := func(msg string) (*graphql.RawParams, string, *requestError) {
		return nil, "", refuse(http.StatusBadRequest, codes.BadRequest, msg)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var b postBody
	if err := dec.Decode(&b); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return bad("the body's " + te.Field + " has the wrong type")
		}
		return bad("the body is not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return bad("the body has data after its JSON object")
	}
	docID := ""
	for _, id := range []*string{b.DocumentID, b.DocID} {
		if id != nil {
			docID = *id
		}
	}
	p := &graphql.RawParams{}
	if b.Query != nil {
		p.Query = *b.Query
	}
	if b.OperationName != nil {
		p.OperationName = *b.OperationName
	}
	if err := decodeObject(b.Variables, &p.Variables); err != nil {
		return bad("the body's variables must be a JSON object")
	}
	if err := decodeObject(b.Extensions, &p.Extensions); err != nil {
		return bad("the body's extensions must be a JSON object")
	}
	if p.Query == "" && docID == "" && p.Extensions["persistedQuery"] == nil {
		return bad("the body has no query, documentId or persistedQuery")
	}
	return p, docID, nil
}

// paramsFromURL reads a GET's parameters from its query string.
func paramsFromURL(u *url.URL) (*graphql.RawParams, string, *requestError) {
	bad := func(msg string) (*graphql.RawParams, string, *requestError) {
		return nil, "", refuse(http.StatusBadRequest, codes.BadRequest, msg)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("the query string is malformed")
	}
	p := &graphql.RawParams{Query: q.Get("query"), OperationName: q.Get("operationName")}
	if v := q.Get("variables"); v != "" {
		if err := decodeObject(json.RawMessage(v), &p.Variables); err != nil {
			return bad("the variables parameter must be a JSON object")
		}
	}
	if v := q.Get("extensions"); v != "" {
		if err := decodeObject(json.RawMessage(v), &p.Extensions); err != nil {
			return bad("the extensions parameter must be a JSON object")
		}
	}
	docID := cmp.Or(q.Get("documentId"), q.Get("doc_id"))
	if p.Query == "" && docID == "" && p.Extensions["persistedQuery"] == nil {
		return bad("the query parameter is missing")
	}
	return p, docID, nil
}

// decodeObject decodes a JSON object or null into m, numbers kept exact as
// gqlgen's own transports keep them.
func decodeObject(raw json.RawMessage, m *map[string]any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(m); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the object")
	}
	if *m == nil {
		return errors.New("not an object")
	}
	return nil
}

// requestErrorStatus is the status of a request that failed before
// execution: 400 under application/graphql-response+json, 200 under
// application/json, as the GraphQL-over-HTTP spec asks; 504 when it ran out
// of time.
func requestErrorStatus(list gqlerror.List, media string) int {
	for _, e := range list {
		if e.Extensions["code"] == string(codes.RequestTimeout) {
			return http.StatusGatewayTimeout
		}
	}
	if media == "application/graphql-response+json" && errcode.GetErrorKind(list) == errcode.KindProtocol {
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// introspectionOnly reports whether the operation selects nothing but the
// schema's introspection (__schema, __type, __typename) at its root.
func introspectionOnly(rc *graphql.OperationContext) bool {
	root := map[ast.Operation]string{ast.Query: "Query", ast.Mutation: "Mutation", ast.Subscription: "Subscription"}
	for _, f := range graphql.CollectFields(rc, rc.Operation.SelectionSet, []string{root[rc.Operation.Operation]}) {
		switch f.Name {
		case "__schema", "__type", "__typename":
		default:
			return false
		}
	}
	return true
}

// refuseRequest answers a request the transport refuses itself, and records
// the code in its Info.
func refuseRequest(w http.ResponseWriter, r *http.Request, status int, errs ...*codes.Error) {
	if i := InfoFrom(r.Context()); i != nil && len(errs) > 0 {
		i.refused(errs[0].Code)
	}
	codes.Write(w, r, status, errs...)
}

// writeResponse writes a GraphQL response with the status. The data the
// executor wrote is written as it is, not decoded, encoded or copied again;
// a request that failed before execution has no data member.
func writeResponse(w http.ResponseWriter, media string, status int, resp *graphql.Response, withData bool) {
	var head, tail []byte
	head = append(head, '{')
	if len(resp.Errors) > 0 {
		b, err := json.Marshal(resp.Errors)
		if err != nil {
			b = []byte(`[{"message":"internal error","extensions":{"code":"INTERNAL"}}]`)
		}
		head = append(append(head, `"errors":`...), b...)
	}
	data := resp.Data
	if withData {
		if len(head) > 1 {
			head = append(head, ',')
		}
		head = append(head, `"data":`...)
		if len(data) == 0 {
			data = json.RawMessage("null")
		}
	} else {
		data = nil
	}
	if len(resp.Extensions) > 0 {
		if b, err := json.Marshal(resp.Extensions); err == nil {
			if len(head) > 1 || len(data) > 0 {
				tail = append(tail, ',')
			}
			tail = append(append(tail, `"extensions":`...), b...)
		}
	}
	tail = append(tail, "}\n"...)
	h := w.Header()
	h.Set("Content-Type", media)
	h.Set("Content-Length", strconv.Itoa(len(head)+len(data)+len(tail)))
	w.WriteHeader(status)
	_, _ = w.Write(head)
	_, _ = w.Write(data)
	_, _ = w.Write(tail)
}
