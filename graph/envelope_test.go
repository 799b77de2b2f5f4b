package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// repeatsMember reports whether body, one JSON object, has one of the six
// members of a GraphQL request twice, which decodeEnvelope refuses and
// encoding/json reads as the last.
func repeatsMember(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		switch k, _ := t.(string); k {
		case "query", "operationName", "documentId", "doc_id", "variables", "extensions":
			if seen[k] {
				return true
			}
			seen[k] = true
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
	}
	return false
}

// referenceEnvelope is how the transport read a body before decodeEnvelope:
// encoding/json, into a struct of the members. decodeEnvelope must read
// every body alike, but for the documented differences: member names match
// exactly, nesting is bounded by maxBodyNesting and a list by maxBodyList,
// and none of the six members of a request comes twice (repeatsMember).
func referenceEnvelope(body []byte) (q, op, docID *string, vars, ext json.RawMessage, ok bool) {
	var b struct {
		Query         *string         `json:"query"`
		OperationName *string         `json:"operationName"`
		Variables     json.RawMessage `json:"variables"`
		Extensions    json.RawMessage `json:"extensions"`
		DocumentID    *string         `json:"documentId"`
		DocID         *string         `json:"doc_id"`
	}
	if string(bytes.TrimSpace(body)) == "null" {
		return nil, nil, nil, nil, nil, false // decoded as no member at all, then refused for its missing query
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&b); err != nil {
		return nil, nil, nil, nil, nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, nil, nil, nil, false
	}
	isObj := func(m json.RawMessage) bool {
		return len(m) == 0 || string(m) == "null" || m[0] == '{'
	}
	if !isObj(b.Variables) || !isObj(b.Extensions) || repeatsMember(body) {
		return nil, nil, nil, nil, nil, false
	}
	docID = b.DocID
	if docID == nil {
		docID = b.DocumentID
	}
	if b.DocID != nil && b.DocumentID != nil {
		docID = b.DocID // decodeEnvelope: doc_id wins, as paramsFromBody had it
	}
	norm := func(m json.RawMessage) json.RawMessage {
		if string(m) == "null" {
			return nil
		}
		return m
	}
	return b.Query, b.OperationName, docID, norm(b.Variables), norm(b.Extensions), true
}

// differs reports whether body falls under one of decodeEnvelope's two
// documented differences from encoding/json: a member name that matches
// one of the envelope's only case-insensitively, or nesting at
// maxBodyNesting or deeper (counted over-generously, brackets in strings
// too).
func differs(body []byte) bool {
	depth := 0
	for _, c := range body {
		switch c {
		case '{', '[':
			if depth++; depth >= maxBodyNesting {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	if bytes.Count(body, []byte(",")) >= maxBodyList {
		return true // it may have a list longer than the gateway takes
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return false
	}
	for k := range members {
		for _, name := range []string{"query", "operationName", "variables", "extensions", "documentId", "doc_id"} {
			if k != name && strings.EqualFold(k, name) {
				return true
			}
		}
	}
	return false
}

func checkEnvelope(t *testing.T, body []byte) {
	t.Helper()
	if differs(body) {
		_, _ = decodeEnvelope(body) // accepted or not, it must not panic
		return
	}
	q, op, docID, vars, ext, ok := referenceEnvelope(body)
	env, err := decodeEnvelope(body)
	if ok != (err == nil) {
		t.Fatalf("%q: encoding/json ok=%v, decodeEnvelope error %v", body, ok, err)
	}
	if !ok {
		return
	}
	str := func(p *string) optString {
		if p == nil {
			return optString{}
		}
		return optString{*p, true}
	}
	id := env.docID
	if !id.set {
		id = env.documentID
	}
	if env.query != str(q) || env.operationName != str(op) || id != str(docID) {
		t.Fatalf("%q: strings %+v %+v %+v, want %v %v %v", body, env.query, env.operationName, id, q, op, docID)
	}
	if !bytes.Equal(env.variables, vars) || !bytes.Equal(env.extensions, ext) {
		t.Fatalf("%q: objects %s %s, want %s %s", body, env.variables, env.extensions, vars, ext)
	}
	for _, raw := range [][]byte{env.variables, env.extensions} {
		checkDecodeObject(t, raw)
	}
}

// checkDecodeObject checks that decodeObject reads raw, an object or null
// that decodeEnvelope took, as encoding/json with UseNumber does.
func checkDecodeObject(t *testing.T, raw []byte) {
	t.Helper()
	var want map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if len(raw) > 0 {
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("%q: encoding/json: %v", raw, err)
		}
	}
	var got map[string]any
	if err := decodeObject(raw, &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decodeObject %#v, %v; want %#v", raw, got, err, want)
	}
}

var envelopeSeeds = []string{
	`{"query":"{ __typename }"}`,
	`{"query":"query Q($a: Int) { a(x: $a) }\n","operationName":"Q","variables":{"a":1,"b":[1.5e3,-0,true,null,"s"]},"extensions":{"persistedQuery":{"version":1,"sha256Hash":"ab"}}}`,
	`  {"query": "\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00\ud800x\udc00", "pad": {"a": [{}, []]}} `,
	`{"query": null, "documentId": "x", "doc_id": null}`,
	`{"query": 1}`,
	`{"query": "a", "query": "b"}`,
	`{"variables": "x"}`,
	`{"variables": [1]}`,
	`{"query": "{ a }"} {"query": "{ b }"}`,
	`{"query": "{ a }",}`,
	`{"query": "unterminated}`,
	"{\"query\": \"\xff\xfe invalid utf-8 \xc3\"}",
	"{\"query\": \"control \x01\"}",
	`{"query": "bad escape \x"}`,
	`{"query": "bad \u12g4"}`,
	`{"n": 01}`, `{"n": -}`, `{"n": 1.}`, `{"n": 1e}`, `{"n": 1E+2}`, `{"n": tru}`, `{"n": nul}`,
	`[]`, `"s"`, ``, `{`, `{}`, `{"a":1 "b":2}`, `{"a"}`, `{1: 2}`,
	`{"variables":{"id":"QnVkZ2V0OmI=","in":{"n":[1,-2.5e-3,{"é\u00e9":null}],"t":true,"f":false},"\ud800":"\udc00","k":1,"k":[]}}`,
	"{\"variables\":{\"\xff\":\"\xfe\"}}",
	`{"query":"` + strings.Repeat("x", 100) + `\n` + strings.Repeat("é", 20) + `"}`,
}

func TestDecodeEnvelopeReadsAsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, b := range envelopeSeeds {
		checkEnvelope(t, []byte(b))
	}
}

func TestDecodeEnvelopeBoundsNesting(t *testing.T) {
	t.Parallel()
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct {
		body string
		deep bool // refused as variables too deep
		ok   bool
	}{
		{`{"variables": {"a": ` + deep(maxBodyNesting-2) + `}}`, false, true},
		{`{"variables": {"a": ` + deep(maxBodyNesting-1) + `}}`, true, false},
		{`{"variables": {"a": ` + deep(9997) + `}}`, true, false},
		{`{"pad": ` + deep(9997) + `}`, false, false},
	} {
		_, err := decodeEnvelope([]byte(tc.body))
		if (err == nil) != tc.ok || (err != nil && err.deepVariables != tc.deep) {
			t.Errorf("%.60s…: %v", tc.body, err)
		}
	}
}

func TestUnquoteAsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{`a\u00e9\ud83d\ude00`, `\ud800`, `\ud800\u0041`, `\udc00\ud800`, "\xff", `\"\\\/\b\f\n\r\t`} {
		var want string
		if err := json.Unmarshal([]byte(`"`+s+`"`), &want); err != nil {
			t.Fatal(err)
		}
		if got := unquote([]byte(s)); got != want || !utf8.ValidString(got) {
			t.Errorf("unquote(%q) = %q, want %q", s, got, want)
		}
	}
}

// FuzzDecodeEnvelope checks decodeEnvelope against encoding/json.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, b := range envelopeSeeds {
		f.Add([]byte(b))
	}
	f.Fuzz(checkEnvelope)
}

// A body is decoded with one copy: its strings.
func BenchmarkDecodeEnvelope(b *testing.B) {
	for _, tc := range []struct{ name, body string }{
		{"comment-padded-512KiB", `{"query":"# ` + strings.Repeat("#", 512<<10) + `\n{ __typename }"}`},
		{"pad-512KiB", `{"query": "{ __typename }", "pad": "` + strings.Repeat("x", 512<<10) + `"}`},
		{"small", `{"query":"query Q($a: Int) { a(x: $a) }","operationName":"Q","variables":{"a":1}}`},
	} {
		body := []byte(tc.body)
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeEnvelope(body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, _, _, ok := referenceEnvelope(body); !ok {
					b.Fatal(errors.New("refused"))
				}
			}
		})
	}
}
