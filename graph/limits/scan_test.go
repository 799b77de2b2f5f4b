package limits_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/lexer"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/costgw/gateway/graph/internal/introspection"
	"github.com/costgw/gateway/graph/limits"
)

// lexTokens counts the tokens of q as gqlparser's lexer reads them, and
// reports whether it lexed all of q.
func lexTokens(q string) (int, bool) {
	lx := lexer.New(&ast.Source{Input: q})
	for n := 0; ; n++ {
		tok, err := lx.ReadToken()
		if err != nil {
			return n, false
		}
		if tok.Kind == lexer.EOF {
			return n, true
		}
	}
}

// writtenFields counts the field nodes of a parsed document.
func writtenFields(doc *ast.QueryDocument) int {
	var count func(ast.SelectionSet) int
	count = func(set ast.SelectionSet) int {
		n := 0
		for _, s := range set {
			switch s := s.(type) {
			case *ast.Field:
				n += 1 + count(s.SelectionSet)
			case *ast.InlineFragment:
				n += count(s.SelectionSet)
			}
		}
		return n
	}
	n := 0
	for _, op := range doc.Operations {
		n += count(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		n += count(f.SelectionSet)
	}
	return n
}

// atCommentEnd reports whether two errors are the same but for the column,
// on a line where a comment ends the document or ends at a control
// character: WithoutComments's documented exception.
func atCommentEnd(q string, err, serr error) bool {
	e, ok1 := err.(*gqlerror.Error)
	s, ok2 := serr.(*gqlerror.Error)
	if !ok1 || !ok2 || e.Message != s.Message || len(e.Locations) != 1 || len(s.Locations) != 1 ||
		e.Locations[0].Line != s.Locations[0].Line {
		return false
	}
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(q, "\r\n", "\n"), "\r", "\n"), "\n")
	line := e.Locations[0].Line
	return line <= len(lines) && strings.Contains(lines[line-1], "#")
}

// sameUnexpectedComment reports whether two errors are the parser's
// "Unexpected Comment" at the same place: its message quotes the comment,
// whose text WithoutComments removes. (A comment right after a description,
// `""#0`, is one.)
func sameUnexpectedComment(err, serr error) bool {
	e, ok1 := err.(*gqlerror.Error)
	s, ok2 := serr.(*gqlerror.Error)
	const unexpected = `Unexpected Comment "`
	return ok1 && ok2 && strings.HasPrefix(e.Message, unexpected) && strings.HasPrefix(s.Message, unexpected) &&
		fmt.Sprint(e.Locations) == fmt.Sprint(s.Locations)
}

// positions lists the names, lines and columns of a document's
// definitions, fields and spreads.
func positions(doc *ast.QueryDocument) string {
	var b strings.Builder
	var walk func(ast.SelectionSet)
	walk = func(set ast.SelectionSet) {
		for _, s := range set {
			switch s := s.(type) {
			case *ast.Field:
				fmt.Fprintf(&b, "%s:%s@%d:%d(%d) ", s.Alias, s.Name, s.Position.Line, s.Position.Column, len(s.Arguments))
				walk(s.SelectionSet)
			case *ast.InlineFragment:
				fmt.Fprintf(&b, "...on %s@%d:%d ", s.TypeCondition, s.Position.Line, s.Position.Column)
				walk(s.SelectionSet)
			case *ast.FragmentSpread:
				fmt.Fprintf(&b, "...%s@%d:%d ", s.Name, s.Position.Line, s.Position.Column)
			}
		}
	}
	for _, op := range doc.Operations {
		fmt.Fprintf(&b, "%s %s@%d:%d ", op.Operation, op.Name, op.Position.Line, op.Position.Column)
		walk(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		fmt.Fprintf(&b, "fragment %s@%d:%d ", f.Name, f.Position.Line, f.Position.Column)
		walk(f.SelectionSet)
	}
	return b.String()
}

// checkScan fails when ScanText disagrees with gqlparser on a document
// gqlparser lexes: the tokens must be the lexer's, and the fields those of
// the parsed document when it parses.
func checkScan(t *testing.T, q string) {
	t.Helper()
	want, lexed := lexTokens(q)
	got := limits.ScanText(q, 0)
	if !lexed {
		return
	}
	if !got.Lexed || got.Tokens != want {
		t.Fatalf("ScanText(%q) = %+v; the lexer reads %d tokens", q, got, want)
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: q})
	// Without its comments' text, a document parses to the same tree, the
	// same tokens on the same lines and columns, or fails the same way.
	stripped := limits.WithoutComments(q)
	sdoc, serr := parser.ParseQuery(&ast.Source{Input: stripped})
	if fmt.Sprint(err) != fmt.Sprint(serr) && !atCommentEnd(q, err, serr) && !sameUnexpectedComment(err, serr) {
		t.Fatalf("%q: error %v; without comments (%q): %v", q, err, stripped, serr)
	}
	if err != nil {
		return
	}
	if a, b := positions(doc), positions(sdoc); a != b {
		t.Fatalf("%q: fields at %s; without comments (%q): %s", q, a, stripped, b)
	}
	if s := limits.ScanText(stripped, 0); s.Tokens != got.Tokens || s.Fields != got.Fields || s.CommentBytes != 0 {
		t.Fatalf("%q without comments: %+v, want %+v", q, s, got)
	}
	if w := writtenFields(doc); got.Fields != w {
		t.Fatalf("ScanText(%q) counts %d fields; the document has %d", q, got.Fields, w)
	}
	// The limit stops the count one past it.
	if want > 2 {
		if s := limits.ScanText(q, want-1); s.Tokens != want || s.Lexed {
			t.Fatalf("ScanText(%q, %d) = %+v", q, want-1, s)
		}
	}
}

var scanSeeds = []string{
	`{ a b { c } }`,
	`query Q($a: In = {x: [1, 2, {y: "z"}]}, $b: [Int!]! = [1]) @dir(a: {b: 1}) { a: b(x: {c: {d: 1}}) @include(if: $a) { c } ... on T { d } ... F @skip(if: true) ... @include(if: $x) { e } }`,
	"fragment F on T { a ... on U { b } ...G } # a comment\n{ ...F }",
	"# é comment ü\n{ a # x\r\n b(x: \"#not\") # y\n}\n# last",
	"{ a } # comment then \x01 a control",
	`{ on: a on(x: 1) { on } ... on on { on } }`,
	"\ufeff{ a }\r\n# comment\twith tab\r{ b }",
	`{ a(s: "str\"ing\\ \u00e9 \u{1F600}", b: """block "" \""" string""" , n: -1.5e+10, m: 0, f: 1.0E3) }`,
	`"""desc""" query { a } "d" fragment F on T { b }`,
	`{ a(x: [[[{b: [1]}]]]) { c(y: $z) } }`,
	`{ a, b, c,, }`,
	"{ a }\x01",
	`{ a(s: "unterminated) }`,
	`{ "string at selection" a }`,
	"# only a comment",
	"",
	`{ é }`,
	`{ a(x: 1.) }`,
	`{ a(x: -) }`,
	`{ ..a }`,
	`{ a(x: """ unterminated block) }`,
	`{ a(x: 00) }`,
	`{ a(x: "\u{110000}") }`,
	`{ a(x: "\u{}") }`,
	`{ a(x: "\uD83D\uDE00") }`,
	"{ a(x: \"\xff\xfe\") # \xff\n b }",
	`subscription S { a } mutation M { b(x: $v) }`,
	`{ a(x: ENUM_VALUE, y: true, z: null) }`,
	`{ a b: c d: e(f: 1) @g h }`,
}

func TestScanTextAgreesWithGqlparser(t *testing.T) {
	t.Parallel()
	for _, q := range append(scanSeeds, introspection.Query, strings.Repeat("{ a }", 100)) {
		checkScan(t, q)
	}
}

func TestScanTextCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q              string
		tokens, fields int
	}{
		{"{" + strings.Repeat(" __typename", 14998) + " }", 15000, 14998},
		{"# " + strings.Repeat("#", 1<<20) + "\n{ __typename }", 4, 1},
		{`{ a: b(x: {c: d}) { ... on T { e } ...F } }`, 24, 2},
	} {
		got := limits.ScanText(tc.q, 0)
		if !got.Lexed || got.Tokens != tc.tokens || got.Fields != tc.fields {
			t.Errorf("ScanText(%.40q) = %+v, want %d tokens and %d fields", tc.q, got, tc.tokens, tc.fields)
		}
	}
}

// FuzzScanText checks ScanText against gqlparser's lexer and parser on
// arbitrary documents.
func FuzzScanText(f *testing.F) {
	for _, q := range scanSeeds {
		f.Add(q)
	}
	f.Fuzz(checkScan)
}

// The scan of the largest body the gateway takes costs a fraction of what
// gqlparser's lexer does.
func BenchmarkScanText(b *testing.B) {
	for _, tc := range []struct{ name, q string }{
		{"comment-512KiB", "# " + strings.Repeat("#", 512<<10) + "\n{ __typename }"},
		{"string-512KiB", `{ a(s: "` + strings.Repeat("x", 512<<10) + `") }`},
		{"typename-15000", "{" + strings.Repeat(" __typename", 15000) + " }"},
		{"introspection", introspection.Query},
	} {
		b.Run(tc.name+"/scan", func(b *testing.B) {
			b.SetBytes(int64(len(tc.q)))
			b.ReportAllocs()
			for b.Loop() {
				limits.ScanText(tc.q, 0)
			}
		})
		b.Run(tc.name+"/gqlparser-lexer", func(b *testing.B) {
			b.SetBytes(int64(len(tc.q)))
			for b.Loop() {
				lexTokens(tc.q)
			}
		})
	}
}
