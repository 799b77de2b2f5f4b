package graph

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/internal/answerbuf"
	"github.com/costgw/gateway/graph/model"
	"github.com/costgw/gateway/upstream"
)

// NoKeyMaxBodyBytes bounds the body (or a GET's query string) of a request
// without an API key: such a request can only introspect the schema, and
// the largest introspection query a tool sends is a few kilobytes.
const NoKeyMaxBodyBytes = 32 << 10

// MaxQueryStringBytes bounds a GET's query string, with a key or without:
// a GET carries a query (often only a persisted query's hash), and larger
// requests go as POST, as URLs over a few kilobytes do not pass many proxies
// and CDNs (Node.js servers take 16 KiB of headers in all).
const MaxQueryStringBytes = 32 << 10

// MaxHeaderBytes bounds a request's line and headers, as net/http's
// Server.MaxHeaderBytes (past it net/http answers 431 itself, and closes
// the connection): a GET of the largest query string and 16 KiB for the
// other headers, an API key of MaxAPIKeyLen among them. It is what a
// connection can make the gateway hold before its headers end.
const MaxHeaderBytes = MaxQueryStringBytes + 16<<10

// maxAuthorization is the longest Authorization header the gateway reads: a
// bearer key of upstream.MaxAPIKeyLen bytes.
const maxAuthorization = len("Bearer ") + upstream.MaxAPIKeyLen

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
	trusted *trusted // trusted documents; nil: none
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
		InfoFrom(r.Context()).answer(nil, nil) // answered, with no error
		w.Header().Set("Allow", "GET, POST, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	ctx := r.Context()
	_, hasKey := upstream.APIKeyFrom(ctx)
	params, docID, rerr := t.params(w, r, hasKey)
	if rerr == nil && docID != "" && params.Query != "" {
		rerr = refuse(http.StatusBadRequest, codes.BadRequest, "send a documentId or a query, not both")
	}
	if rerr == nil && docID != "" && params.Extensions["persistedQuery"] != nil {
		rerr = refuse(http.StatusBadRequest, codes.BadRequest, "send a documentId or a persistedQuery, not both")
	}
	if rerr == nil && params.Extensions["persistedQuery"] != nil {
		// Checked before the trusted documents or the APQ store read it.
		if msg := checkPersistedQuery(params.Extensions["persistedQuery"]); msg != "" {
			rerr = refuse(http.StatusBadRequest, codes.BadRequest, msg)
		}
	}
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
	ctx = withDocSlot(ctx)
	if params.Extensions["persistedQuery"] != nil {
		ctx = withAPQSlot(ctx) // what gqlgen's extension would register
	}
	rc, list := exec.CreateOperationContext(ctx, params)
	if list != nil {
		variablePaths(list)
		resp := exec.DispatchError(graphql.WithOperationContext(ctx, rc), list)
		InfoFrom(ctx).answer(resp.Errors, resp.Data)
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
	if hasKey {
		// The query parsed, validated and passed every limit: an automatic
		// persisted query it came with is one the gateway runs.
		registerAPQ(ctx)
	}
	multipart := acceptsMultipart(r)
	if !multipart {
		withoutDefer(rc)
	}
	responses, ctx := exec.DispatchOperation(model.WithJSONBudget(ctx), rc)
	first := responses(ctx)
	switch {
	case first == nil:
		refuseRequest(w, r, http.StatusGatewayTimeout, codes.Errorf(codes.RequestTimeout, "the request ended before its answer was ready"))
	case answerTooLarge(first):
		// The limit's error alone, as a request error: the nulls of the
		// fields left unresolved on the way are not errors of the request.
		first.Errors, first.Data = first.Errors[:1], nil
		InfoFrom(ctx).answer(first.Errors, nil)
		writeResponse(w, media, requestErrorStatus(first.Errors, media), first, false)
	case multipart && hasNext(first):
		InfoFrom(ctx).answer(first.Errors, first.Data)
		writeIncremental(ctx, w, first, responses)
	default:
		InfoFrom(ctx).answer(first.Errors, first.Data)
		writeResponse(w, media, http.StatusOK, first, true)
		if len(first.Errors) == 0 {
			// Written, and held by nothing else: the Info keeps the data
			// of an answer with errors only.
			answerbuf.Put(first.Data)
		}
	}
}

// params reads the request's GraphQL parameters and the trusted document
// it names, if any, or says why it cannot. A POST's body is the one
// readFirst read before the request was admitted, when it did.
func (t httpTransport) params(w http.ResponseWriter, r *http.Request, hasKey bool) (*graphql.RawParams, string, *requestError) {
	limit := bodyLimit(t.maxBody, hasKey)
	early, _ := r.Context().Value(earlyBodyKey{}).(*earlyBody)
	if early == nil { // readFirst read no body: its headers are checked here
		if rerr := checkHTTP(r, limit, hasKey); rerr != nil {
			switch rerr.err.Code {
			case codes.MethodNotAllowed:
				w.Header().Set("Allow", "GET, POST, OPTIONS")
			case codes.UnsupportedMediaType:
				w.Header().Set("Accept-Encoding", "identity") // the one coding taken (RFC 9110, 15.5.16)
			}
			return nil, "", rerr
		}
		if r.Method == http.MethodGet {
			return paramsFromURL(r)
		}
	}
	buf, done, err := takeBody(w, r, early, limit)
	defer done()
	if errors.Is(err, errCallerBodies) {
		w.Header().Set("Retry-After", "1")
		InfoFrom(r.Context()).blameCaller()
		return nil, "", refuse(http.StatusTooManyRequests, codes.RateLimited, fmt.Sprintf(
			"this caller's requests hold %d MiB of bodies not yet decoded, the most one caller may; send it again later", MaxCallerBodyBytes>>20))
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, "", refuse(http.StatusRequestEntityTooLarge, codes.RequestTooLarge, tooLarge("body", limit, hasKey))
	}
	if err != nil {
		return nil, "", refuse(http.StatusBadRequest, codes.BadRequest, "the request body could not be read")
	}
	return paramsFromBody(r, *buf)
}

// bodyLimit is the most a request's body (or a GET's query string) may
// hold: maxBody, and no more than NoKeyMaxBodyBytes without a key.
func bodyLimit(maxBody int64, hasKey bool) int64 {
	if !hasKey {
		return min(maxBody, NoKeyMaxBodyBytes)
	}
	return maxBody
}

// checkHTTP checks what of a request its headers tell, before any of its
// body is read: one Authorization header, the method, a POST's media type
// and Content-Length, and a GET's query string, against limit.
func checkHTTP(r *http.Request, limit int64, hasKey bool) *requestError {
	auth := r.Header.Values("Authorization")
	if len(auth) > 1 {
		return refuse(http.StatusBadRequest, codes.BadRequest, "send the API key in one Authorization header")
	}
	if len(auth) == 1 && len(auth[0]) > maxAuthorization {
		return refuse(http.StatusRequestHeaderFieldsTooLarge, codes.RequestTooLarge,
			"the Authorization header is longer than "+strconv.Itoa(maxAuthorization)+" bytes: an API key is at most "+
				strconv.Itoa(upstream.MaxAPIKeyLen))
	}
	switch r.Method {
	case http.MethodGet:
		// The bound without a key is no lower: NoKeyMaxBodyBytes is as large.
		if limit := min(limit, MaxQueryStringBytes); int64(len(r.URL.RawQuery)) > limit {
			return refuse(http.StatusRequestURITooLong, codes.RequestTooLarge, tooLarge("query string", limit, true))
		}
		return nil
	case http.MethodPost:
		mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			return refuse(http.StatusUnsupportedMediaType, codes.UnsupportedMediaType, "send the request as Content-Type: application/json")
		}
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
			// JSON is UTF-8 (RFC 8259): another charset's bytes would be
			// read as UTF-8, and each byte that is not become U+FFFD.
			return refuse(http.StatusUnsupportedMediaType, codes.UnsupportedMediaType, "send the body in UTF-8 (charset=utf-8, or none)")
		}
		if ce := strings.Join(r.Header.Values("Content-Encoding"), ","); ce != "" && !onlyIdentity(ce) {
			// A body the gateway does not decode would be read as JSON as
			// it is (RFC 9110: 415, saying what is accepted).
			return refuse(http.StatusUnsupportedMediaType, codes.UnsupportedMediaType, "send the body without a Content-Encoding")
		}
		if r.ContentLength > limit {
			return refuse(http.StatusRequestEntityTooLarge, codes.RequestTooLarge, tooLarge("body", limit, hasKey))
		}
		return nil
	}
	return refuse(http.StatusMethodNotAllowed, codes.MethodNotAllowed, "send GraphQL with GET or POST")
}

// Request bodies are read into buffers of a pool, each once and whole
// (readBody): no body is copied on its way to the decoder, and the buffers
// of one request serve the next.
var bodyPool sync.Pool // of *[]byte

// pooledBodyBytes is the largest buffer kept for reuse (twice the default
// body limit); a larger one, under a raised -max-body-bytes, is left to the
// garbage collector.
const pooledBodyBytes = 1 << 20

// firstBodyBuffer bounds the room made for a body before any of it has
// arrived: requests are a few kilobytes, and a larger body grows its buffer
// as it arrives.
const firstBodyBuffer = 16 << 10

// readBody reads the request body, at most limit bytes (an error wrapping
// *http.MaxBytesError above it), into a buffer to give back with putBody.
// hold, when not nil, is told of the bytes of each read as they arrive; the
// read ends with errCallerBodies when it says no.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, hold func(n int) bool) (*[]byte, error) {
	most := limit + 1 // +1: the read that sees the end
	if r.ContentLength >= 0 {
		most = min(most, r.ContentLength+1)
	}
	// What Content-Length announces is made room for up to
	// firstBodyBuffer; past that the room grows as the body arrives, so
	// that a client that announces much and sends little holds little.
	size := min(most, firstBodyBuffer)
	bp, _ := bodyPool.Get().(*[]byte)
	if bp == nil || int64(cap(*bp)) < size {
		if bp != nil {
			bodyPool.Put(bp)
		}
		b := make([]byte, 0, max(size, 4<<10))
		bp = &b
	}
	buf := (*bp)[:0]
	body := http.MaxBytesReader(w, r.Body, limit)
	for {
		if len(buf) == cap(buf) {
			// Twice the room, or all of it once a quarter has arrived:
			// the buffer is at most four times what arrived (and 16 KiB),
			// and a body costs its buffer about 1.5 times, not 2.
			room := 2 * int64(cap(buf))
			if int64(len(buf)) >= most/4 {
				room = most
			}
			grown := make([]byte, len(buf), max(min(room, most), int64(cap(buf))+512))
			copy(grown, buf)
			buf = grown
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if n > 0 && hold != nil && !hold(n) {
			*bp = buf
			return bp, errCallerBodies
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			*bp = buf
			return bp, err
		}
	}
	*bp = buf
	return bp, nil
}

// putBody gives a buffer of readBody back.
func putBody(bp *[]byte) {
	if bp != nil && cap(*bp) <= pooledBodyBytes {
		*bp = (*bp)[:0]
		bodyPool.Put(bp)
	}
}

func tooLarge(what string, limit int64, hasKey bool) string {
	msg := "the request " + what + " is larger than " + strconv.FormatInt(limit, 10) + " bytes"
	if !hasKey {
		msg += " (the bound without an API key)"
	}
	return msg
}

// paramsFromBody decodes a POST body (decodeEnvelope): exactly one JSON
// object, with a string query, and the other members of their types or
// null. Errors say what is wrong, never what was sent. Nothing returned
// refers to body, which the caller reuses.
func paramsFromBody(r *http.Request, body []byte) (*graphql.RawParams, string, *requestError) {
	bad := func(msg string) (*graphql.RawParams, string, *requestError) {
		return nil, "", refuse(http.StatusBadRequest, codes.BadRequest, msg)
	}
	env, eerr := decodeEnvelope(body)
	if eerr != nil {
		if eerr.deepVariables {
			return nil, "", deepVariables(r, eerr)
		}
		return bad(eerr.msg)
	}
	docID, ok := oneDocumentID(env.documentID.v, env.docID.v)
	if !ok {
		return bad(twoDocumentIDs)
	}
	p := &graphql.RawParams{Query: env.query.v, OperationName: env.operationName.v}
	if err := decodeObject(env.variables, &p.Variables); err != nil {
		return bad("the body's variables must be a JSON object")
	}
	if err := decodeObject(env.extensions, &p.Extensions); err != nil {
		return bad("the body's extensions must be a JSON object")
	}
	if p.Query == "" && docID == "" && p.Extensions["persistedQuery"] == nil {
		return bad("the body has no query, documentId or persistedQuery")
	}
	return p, docID, nil
}

// oneDocumentID returns the id of the document a request names, by
// documentId (the GraphQL-over-HTTP proposal's) or doc_id (Relay's); not ok
// when it names two.
func oneDocumentID(documentID, docID string) (string, bool) {
	if documentID != "" && docID != "" && documentID != docID {
		return "", false
	}
	return cmp.Or(documentID, docID), true
}

const twoDocumentIDs = "documentId and doc_id name different documents: send one"

// deepVariables refuses variables nested deeper than any input of the
// schema: BAD_USER_INPUT, as the JSON scalar refuses a value too deep, with
// the status of a request error (200 under application/json).
func deepVariables(r *http.Request, e *envelopeError) *requestError {
	status := http.StatusOK
	if codes.MediaType(r) == "application/graphql-response+json" {
		status = http.StatusBadRequest
	}
	return &requestError{status, codes.Errorf(codes.BadUserInput, "%s", e.msg)}
}

// paramsFromURL reads a GET's parameters from its query string.
func paramsFromURL(r *http.Request) (*graphql.RawParams, string, *requestError) {
	u := r.URL
	bad := func(msg string) (*graphql.RawParams, string, *requestError) {
		return nil, "", refuse(http.StatusBadRequest, codes.BadRequest, msg)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("the query string is malformed")
	}
	for _, name := range requestMembers {
		if len(q[name]) > 1 {
			// Which one wins is the reader's choice: a proxy that read
			// one could pass what the gateway, reading another, runs.
			return bad("the query string has " + name + " twice: send one")
		}
	}
	p := &graphql.RawParams{Query: q.Get("query"), OperationName: q.Get("operationName")}
	if v := q.Get("variables"); v != "" {
		if err := checkJSONObject([]byte(v)); err != nil {
			if verr := variablesError(err); verr != nil {
				return nil, "", deepVariables(r, verr)
			}
		}
		if err := decodeObject([]byte(v), &p.Variables); err != nil {
			return bad("the variables parameter must be a JSON object")
		}
	}
	if v := q.Get("extensions"); v != "" {
		if err := checkJSONObject([]byte(v)); err != nil {
			return bad("the extensions parameter must be a JSON object")
		}
		if err := decodeObject([]byte(v), &p.Extensions); err != nil {
			return bad("the extensions parameter must be a JSON object")
		}
	}
	docID, ok := oneDocumentID(q.Get("documentId"), q.Get("doc_id"))
	if !ok {
		return bad(twoDocumentIDs)
	}
	if p.Query == "" && docID == "" && p.Extensions["persistedQuery"] == nil {
		return bad("the query parameter is missing")
	}
	return p, docID, nil
}

// decodeObject decodes a JSON object or null into m as encoding/json with
// UseNumber does, numbers kept exact as gqlgen's own transports keep them,
// in one pass over raw with jsonScanner.decode. raw is a member of the
// request (the body's, or a GET parameter), checked already at the level
// decodeEnvelope and checkJSONObject give it: 2.
func decodeObject(raw []byte, m *map[string]any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	s := jsonScanner{b: raw}
	s.ws()
	if s.peek() != '{' {
		return errors.New("not an object")
	}
	v, ok := s.decode(2)
	s.ws()
	if !ok || s.i < len(s.b) {
		return errors.New("not one JSON object")
	}
	*m = v.(map[string]any)
	return nil
}

// requestErrorStatus is the status of a request that failed before
// execution: 400 under application/graphql-response+json, 200 under
// application/json, as the GraphQL-over-HTTP spec asks; 400 under either
// for a request that is not a well-formed GraphQL request (BAD_REQUEST,
// such as a malformed persistedQuery extension); 504 when it ran out of
// time.
func requestErrorStatus(list gqlerror.List, media string) int {
	for _, e := range list {
		switch e.Extensions["code"] {
		case string(codes.RequestTimeout):
			return http.StatusGatewayTimeout
		case string(codes.BadRequest): // not a GraphQL request, whatever the media type
			return http.StatusBadRequest
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
		i.AnsweredWith(errs[0].Code)
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
		if len(head) > 1 || len(data) > 0 {
			tail = append(tail, ',')
		}
		tail = append(tail, `"extensions":`...)
		c, ok := resp.Extensions["cost"].(costInfo)
		ci, cached := resp.Extensions["cache"].(cacheInfo)
		switch n := len(resp.Extensions); {
		case ok && n == 1:
			// The usual extensions, written without encoding/json's
			// reflection over a map, which every answer would pay.
			tail = append(c.appendJSON(append(tail, `{"cost":`...)), '}')
		case ok && cached && n == 2:
			// In encoding/json's order of a map's members.
			tail = ci.appendJSON(append(tail, `{"cache":`...))
			tail = append(c.appendJSON(append(tail, `,"cost":`...)), '}')
		default:
			if b, err := json.Marshal(resp.Extensions); err == nil {
				tail = append(tail, b...)
			} else {
				tail = tail[:0] // none written rather than half a member
			}
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

// answerTooLarge reports whether resp is the answer of an operation whose
// answer went past -max-answer-values, which the executor puts first.
func answerTooLarge(resp *graphql.Response) bool {
	return len(resp.Errors) > 0 && resp.Data == nil && resp.Errors[0].Extensions["code"] == string(codes.MaxAnswerValues)
}

// variablePaths moves the path of an error about a variable's value
// (gqlparser's and the limits' "variable", "n", …) to
// extensions.variablePath, and names the variable in its message: an
// error's path is a path of the answer (GraphQL spec, "Errors"), and a
// request refused for its variables has none.
func variablePaths(list gqlerror.List) {
	for _, e := range list {
		if len(e.Path) < 2 || e.Path[0] != ast.PathName("variable") {
			continue
		}
		var b strings.Builder
		b.WriteByte('$')
		for i, p := range e.Path[1:] {
			switch p := p.(type) {
			case ast.PathName:
				if i > 0 {
					b.WriteByte('.')
				}
				b.WriteString(string(p))
			case ast.PathIndex:
				b.WriteString("[" + strconv.Itoa(int(p)) + "]")
			}
		}
		if name := b.String(); !strings.HasPrefix(e.Message, name) {
			e.Message = name + ": " + e.Message
		}
		if e.Extensions == nil {
			e.Extensions = map[string]any{}
		}
		e.Extensions["variablePath"] = pathValues(e.Path[1:])
		e.Path = nil
	}
}

// onlyIdentity reports whether ce, the Content-Encoding lines joined by
// commas, names no coding but identity.
func onlyIdentity(ce string) bool {
	for c := range strings.SplitSeq(ce, ",") {
		if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
			return false
		}
	}
	return true
}
