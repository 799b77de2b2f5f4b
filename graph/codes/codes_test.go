package codes_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/graph/internal/golden"
)

// docs/errors.md documents every registered code, with the same meaning and
// retry advice, and no code that is not registered.
func TestEveryCodeIsDocumented(t *testing.T) {
	t.Parallel()
	const path = "../../docs/errors.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if golden.Updating() {
		var rows strings.Builder
		for _, c := range codes.All() {
			info, _ := c.Info()
			fmt.Fprintf(&rows, "| `%s` | %s | %s |\n", c, info.Meaning, info.Retry)
		}
		table := regexp.MustCompile("(?m)(^\\| `[A-Z_]+` \\| .* \\|\n)+")
		doc = table.ReplaceAll(doc, []byte(rows.String()))
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type row struct{ Meaning, Retry string }
	documented := map[codes.Code]row{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\| (.*) \\| (.*) \\|$").FindAllSubmatch(doc, -1) {
		documented[codes.Code(m[1])] = row{string(m[2]), string(m[3])}
	}
	registered := map[codes.Code]row{}
	for _, c := range codes.All() {
		info, _ := c.Info()
		registered[c] = row{info.Meaning, info.Retry.String()}
	}
	if diff := cmp.Diff(registered, documented); diff != "" {
		t.Errorf("docs/errors.md differs from the registry (-registry +docs):\n%s", diff)
	}
}

// The answer's media type follows the Accept header's q-values: the GraphQL
// response type once won whenever the header named it, at q=0.1 below
// application/json too.
func TestMediaTypeFollowsPreference(t *testing.T) {
	const g, j = "application/graphql-response+json", "application/json"
	for accept, want := range map[string]string{
		"":                                   j,
		"*/*":                                j,
		"application/*":                      j,
		"text/html":                          j,
		"application/json":                   j,
		g:                                    g,
		g + ", " + j + ";q=0.9":              g,
		j + ", " + g:                         g,
		g + ";q=0.1, " + j:                   j,
		g + ";q=0":                           j,
		j + ";q=0, " + g:                     g,
		j + ";q=0":                           j,
		"*/*, " + j + ";q=0":                 g,
		"application/*;q=0.5, " + g + ";q=0": j,
		g + ";q=0.5, */*;q=0.4":              g,
		g + ";q=bogus, " + j:                 j,
		"application/graphql-response+json; charset=utf-8": g,
	} {
		req := httptest.NewRequest("POST", "/graphql", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		if got := codes.MediaType(req); got != want {
			t.Errorf("Accept %q: %s, want %s", accept, got, want)
		}
	}
}
