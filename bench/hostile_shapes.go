package main

// The hostile shapes of issue 14: what an attacker sends, each as the
// request it is. hostile.go sends them; hostile_gen.go makes the random
// documents.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/costgw/gateway/graph"
	"github.com/costgw/gateway/upstream/sim"
)

// hostileTarget is what the shapes need to know of the gateway and its data.
type hostileTarget struct {
	url string // the gateway's /graphql
	// budgetID is the global ID of a budget of organization one, the
	// attackers' organization when they send a key.
	budgetID string
	// explorerReportID is that budget's Explorer report.
	explorerReportID string
	// random are the random documents, sent in turn.
	random []randomDoc
	// static are the bodies of the shapes that always send the same.
	static map[string][]byte
}

// prepare makes the bodies of the shapes that always send the same.
func (t *hostileTarget) prepare() {
	t.static = map[string][]byte{}
	for _, s := range hostileShapes {
		if s.body != nil {
			t.static[s.Name] = s.body(t)
		}
	}
}

// A hostileShape is one kind of hostile request.
type hostileShape struct {
	// Name identifies the shape in flags and reports.
	Name string `json:"name"`
	// Item is the item of issue 14 it checks.
	Item string `json:"item"`
	// Title says what it is.
	Title string `json:"title"`
	// Keys are the variants sent: with the attackers' key, without any.
	Keys []keyMode `json:"keys"`

	// body is the GraphQL request body of a shape that always sends the
	// same, POSTed as JSON; edit, when set, changes each such request.
	body func(t *hostileTarget) []byte
	edit func(req *http.Request, n int64)
	// request makes the n-th request of a shape whose requests differ (the
	// comment-padded documents are all different) or are not a JSON POST.
	request func(ctx context.Context, t *hostileTarget, n int64, key keyMode) (*http.Request, error)
}

// newRequest makes the n-th request of the shape.
func (s *hostileShape) newRequest(ctx context.Context, t *hostileTarget, n int64, key keyMode) (*http.Request, error) {
	if s.request != nil {
		return s.request(ctx, t, n, key)
	}
	req, err := gqlRequest(ctx, t, t.static[s.Name], key)
	if err == nil && s.edit != nil {
		s.edit(req, n)
	}
	return req, err
}

// keyMode is whether a hostile request carries the attackers' key.
type keyMode string

const (
	withKey    keyMode = "key"
	withoutKey keyMode = "no key"
	// unknownKey is a bearer key the upstream does not know; the shape sets it.
	unknownKey keyMode = "unknown key"
)

var bothKeys = []keyMode{withKey, withoutKey}

// attackKey is the attackers' key: organization one. The legitimate traffic
// uses another organization's key.
const attackKey = sim.DemoKey

// gqlRequest is a POST of a GraphQL request body.
func gqlRequest(ctx context.Context, t *hostileTarget, body []byte, key keyMode) (*http.Request, error) {
	return postBody(ctx, t.url, "application/json", bytes.NewReader(body), int64(len(body)), key)
}

func postBody(ctx context.Context, url, contentType string, body io.Reader, n int64, key keyMode) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, body)
	if err != nil {
		return nil, err
	}
	req.ContentLength = n
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	if key == withKey {
		req.Header.Set("Authorization", "Bearer "+attackKey)
	}
	return req, nil
}

// mustBody is the JSON body of a GraphQL request.
func mustBody(query string, vars map[string]any) []byte {
	m := map[string]any{"query": query}
	if vars != nil {
		m["variables"] = vars
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// fragmentFanout is 26 fragments, each spreading the next twice: 2^25
// selections once expanded, in a document of 78 lines.
func fragmentFanout() string {
	var b strings.Builder
	b.WriteString("query FanOut { ...f0 }\n")
	for i := range 25 {
		fmt.Fprintf(&b, "fragment f%d on Query { ...f%d ...f%d }\n", i, i+1, i+1)
	}
	b.WriteString("fragment f25 on Query { __typename }\n")
	return b.String()
}

// typenames is { __typename … } with n selections: n + 2 tokens.
func typenames(n int) string {
	return "{" + strings.Repeat(" __typename", n) + " }"
}

// deepJSON is an array nested depth levels deep.
func deepJSON(depth int) json.RawMessage {
	return json.RawMessage(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

// Sizes of the shapes.
const (
	// paddingBytes fills a document with a comment to 1.9 MB, as issue 14
	// sent it: just under the default body limit of the time (2 000 000
	// bytes), over today's (graph.DefaultMaxBodyBytes). The -at-limit
	// shapes send the same just under today's limit.
	paddingBytes = 1_900_000
	// deepJSONDepth is the nesting of the JSON value: with the body's own
	// two levels around it, 9 999, under encoding/json's limit of 10 000, so
	// the body is read and the value reaches the gateway (issue 14 item 8
	// stored one 9 997 deep).
	deepJSONDepth = 9_997
	// maxTokenTypenames fill a document to exactly the default token limit
	// of 15 000 with the braces.
	maxTokenTypenames = 14_998
)

// overviewBody is the Overview query of the benchmark.
func overviewBody(*hostileTarget) []byte { return mustBody(queryByName("Overview").Gateway, nil) }

// padding is the shared comment of the comment-padded documents.
var padding = bytes.Repeat([]byte("#"), paddingBytes)

// hostileShapes are every shape of issue 14 and the random documents, in
// report order.
var hostileShapes = []hostileShape{
	{
		Name: "fragment-fanout", Item: "A1", Keys: bothKeys,
		Title: "26 fragments, each spreading the next twice (2^25 fields once expanded)",
		body: func(*hostileTarget) []byte {
			return mustBody(fragmentFanout(), nil)
		},
	},
	{
		Name: "typename-15000", Item: "A2", Keys: bothKeys,
		Title: "15 000 `__typename` selections (15 002 tokens)",
		body: func(*hostileTarget) []byte {
			return mustBody(typenames(15_000), nil)
		},
	},
	{
		Name: "comment-padded", Item: "A3", Keys: bothKeys,
		Title: "`{ __typename }` after a comment of 1.9 MB, each document different (would fill the query cache)",
		request: func(ctx context.Context, t *hostileTarget, n int64, key keyMode) (*http.Request, error) {
			head := []byte(`{"query":"# ` + strconv.FormatInt(n, 10) + " ")
			tail := []byte(`\n{ __typename }"}`)
			size := int64(len(head) + len(padding) + len(tail))
			return postBody(ctx, t.url, "application/json",
				io.MultiReader(bytes.NewReader(head), bytes.NewReader(padding), bytes.NewReader(tail)), size, key)
		},
	},
	{
		Name: "comment-padded-at-limit", Item: "A3", Keys: []keyMode{withKey},
		Title: "`{ __typename }` after a comment that fills the body to just under the default body limit " +
			"(`graph.DefaultMaxBodyBytes`), each document different: the largest the gateway parses",
		request: func(ctx context.Context, t *hostileTarget, n int64, key keyMode) (*http.Request, error) {
			head := []byte(`{"query":"# ` + strconv.FormatInt(n, 10) + " ")
			tail := []byte(`\n{ __typename }"}`)
			pad := padding[:graph.DefaultMaxBodyBytes-1-len(head)-len(tail)]
			size := int64(len(head) + len(pad) + len(tail))
			return postBody(ctx, t.url, "application/json",
				io.MultiReader(bytes.NewReader(head), bytes.NewReader(pad), bytes.NewReader(tail)), size, key)
		},
	},
	{
		Name: "tokens-15000", Item: "A4", Keys: bothKeys,
		Title: "a document of exactly 15 000 tokens (14 998 `__typename`), which passes the token limit, " +
			"against the gateway's -request-timeout",
		body: func(*hostileTarget) []byte {
			return mustBody(typenames(maxTokenTypenames), nil)
		},
	},
	{
		Name: "no-key", Item: "A5", Keys: []keyMode{withoutKey},
		Title: "the benchmark's Overview query without an Authorization header",
		body:  overviewBody,
	},
	{
		Name: "bad-key", Item: "A5", Keys: []keyMode{unknownKey},
		Title: "the Overview query with a bearer key the upstream does not know",
		body:  overviewBody,
		edit: func(req *http.Request, n int64) {
			req.Header.Set("Authorization", "Bearer not-a-key-"+strconv.FormatInt(n, 10))
		},
	},
	{
		Name: "deep-json", Item: "B8", Keys: bothKeys,
		Title: fmt.Sprintf("updateBudget with a growthRate (JSON) nested %d deep", deepJSONDepth),
		body: func(t *hostileTarget) []byte {
			return mustBody(`mutation Deep($id: ID!, $g: JSON) {
  updateBudget(input: {id: $id, growthRate: $g}) { budget { id } userErrors { message code } }
}`, map[string]any{"id": t.budgetID, "g": deepJSON(deepJSONDepth)})
		},
	},
	{
		Name: "control-char-key", Item: "B7", Keys: bothKeys,
		Title: "createBudget with an idempotencyKey holding a control character (U+0001)",
		body: func(t *hostileTarget) []byte {
			return mustBody(`mutation Ctl($r: String!) {
  createBudget(input: {name: "hostile", startDate: "2027-01-01", numberOfPeriods: 1, explorerReportId: $r,
                       idempotencyKey: "k\u0001ey"}) { budget { id } userErrors { message code } idempotencyKey }
}`, map[string]any{"r": t.explorerReportID})
		},
	},
	{
		Name: "budgets-first-500", Item: "C12", Keys: bothKeys,
		Title: "a budgets connection with first: 500 (several upstream pages)",
		body: func(*hostileTarget) []byte {
			return mustBody(`{ budgets(first: 500) { nodes { id name status startDate endDate
  plannings { id dimension1 targetItems { dimensionValue amount } } } pageInfo { hasNextPage endCursor } } }`, nil)
		},
	},
	{
		Name: "http-malformed-json", Item: "D17", Keys: bothKeys,
		Title: "a body that is not JSON (a missing closing brace)",
		request: func(ctx context.Context, t *hostileTarget, _ int64, key keyMode) (*http.Request, error) {
			b := []byte(`{"query": "{ __typename }"`)
			return postBody(ctx, t.url, "application/json", bytes.NewReader(b), int64(len(b)), key)
		},
	},
	{
		Name: "http-trailing-data", Item: "D17", Keys: bothKeys,
		Title: "a JSON body followed by more data",
		request: func(ctx context.Context, t *hostileTarget, _ int64, key keyMode) (*http.Request, error) {
			b := []byte(`{"query": "{ __typename }"} {"query": "{ __typename }"}`)
			return postBody(ctx, t.url, "application/json", bytes.NewReader(b), int64(len(b)), key)
		},
	},
	{
		Name: "http-media-type", Item: "D17", Keys: bothKeys,
		Title: "a GraphQL request sent as text/plain",
		request: func(ctx context.Context, t *hostileTarget, _ int64, key keyMode) (*http.Request, error) {
			b := mustBody("{ __typename }", nil)
			return postBody(ctx, t.url, "text/plain", bytes.NewReader(b), int64(len(b)), key)
		},
	},
	{
		Name: "http-1.9MB-body", Item: "D17", Keys: bothKeys,
		Title: "a malformed JSON body of 1.9 MB (echoed whole in the error today)",
		request: func(ctx context.Context, t *hostileTarget, _ int64, key keyMode) (*http.Request, error) {
			head := []byte(`{"query": "{ __typename }", "pad": "`)
			return postBody(ctx, t.url, "application/json", io.MultiReader(bytes.NewReader(head), bytes.NewReader(padding)),
				int64(len(head)+len(padding)), key)
		},
	},
	{
		Name: "http-body-at-limit", Item: "D17", Keys: []keyMode{withKey},
		Title: "the malformed JSON body of http-1.9MB-body, cut to just under the default body limit: read whole, refused",
		request: func(ctx context.Context, t *hostileTarget, _ int64, key keyMode) (*http.Request, error) {
			head := []byte(`{"query": "{ __typename }", "pad": "`)
			pad := padding[:graph.DefaultMaxBodyBytes-1-len(head)]
			return postBody(ctx, t.url, "application/json", io.MultiReader(bytes.NewReader(head), bytes.NewReader(pad)),
				int64(len(head)+len(pad)), key)
		},
	},
	{
		Name: "http-mutation-get", Item: "D18", Keys: bothKeys,
		Title: "a mutation sent with GET (deleteBudget of an id that does not exist)",
		request: func(ctx context.Context, t *hostileTarget, _ int64, key keyMode) (*http.Request, error) {
			q := url.Values{"query": {`mutation { deleteBudget(input: {id: "QnVkZ2V0Om5vLXN1Y2gtYnVkZ2V0"}) { success } }`}}
			req, err := http.NewRequestWithContext(ctx, "GET", t.url+"?"+q.Encode(), nil)
			if err != nil {
				return nil, err
			}
			req.Header.Set("Accept", "application/json")
			if key == withKey {
				req.Header.Set("Authorization", "Bearer "+attackKey)
			}
			return req, nil
		},
	},
	{
		Name: "http-two-keys", Item: "D18", Keys: []keyMode{withKey},
		Title: "two Authorization headers, the attackers' key and another organization's",
		body:  func(*hostileTarget) []byte { return mustBody(queryByName("BudgetList").Gateway, nil) },
		edit:  func(req *http.Request, _ int64) { req.Header.Add("Authorization", "Bearer "+legitKey) },
	},
	{
		Name: "nested-defer", Item: "O", Keys: []keyMode{withKey},
		Title: "nested @defer fragments without labels, over multipart/mixed: a field deferred twice under one " +
			"label once made the answer never end and hold its place in -requests-in-flight",
		body: func(*hostileTarget) []byte {
			return mustBody(`{ budgets(first: 1) { nodes { ... @defer { name ... @defer { metrics { totalTarget } } } } } }`, nil)
		},
		edit: func(req *http.Request, _ int64) { req.Header.Set("Accept", "multipart/mixed, application/json") },
	},
	{
		Name: "skip-null", Item: "O", Keys: bothKeys,
		Title: "`@skip(if: $s)` with `$s` set to null, which once made the executor panic and answer 500",
		body: func(*hostileTarget) []byte {
			return mustBody(`query Skip($s: Boolean = true) { __typename @skip(if: $s) }`, map[string]any{"s": nil})
		},
	},
	{
		Name: "aliased-history", Item: "O", Keys: []keyMode{withKey},
		Title: "29 aliases of a year's daily Explorer history (3 KB): once 21 MB answered for 1.2 s of CPU, " +
			"now past -max-answer-values",
		body: func(*hostileTarget) []byte {
			var b strings.Builder
			b.WriteString("query Aliased { explorer {")
			for i := range 29 {
				fmt.Fprintf(&b, ` h%d: history(query: {dateRange: {start: "2025-11-01", end: "2026-10-31"}, `+
					`groupBy: "product_product_name", costType: "line_item_unblended_cost", granularity: "day"}) `+
					`{ costRows { group date cost } }`, i)
			}
			b.WriteString(" } }")
			return mustBody(b.String(), nil)
		},
	},
	{
		Name: "random", Item: "fuzz", Keys: bothKeys,
		Title: "random documents over the schema: fields and arguments, aliases, named and inline fragments, " +
			"@include/@skip with variables; about half are valid, the rest fail validation (hostile_gen.go)",
		request: func(ctx context.Context, t *hostileTarget, n int64, key keyMode) (*http.Request, error) {
			d := t.random[int(n)%len(t.random)]
			return gqlRequest(ctx, t, d.body, key)
		},
	},
}

func shapeByName(name string) *hostileShape {
	for i := range hostileShapes {
		if hostileShapes[i].Name == name {
			return &hostileShapes[i]
		}
	}
	return nil
}
