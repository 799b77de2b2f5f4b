package limits

import "strings"

// TextMeasure is what a query document measures from its text alone, before it is
// parsed: one pass over its bytes, far cheaper than gqlparser's lexer (a
// comment or a string is skipped eight bytes at a time, and nothing is
// allocated).
type TextMeasure struct {
	// Tokens are the lexical tokens, counted as gqlparser's lexer and parser
	// count them (comments included, commas and whitespace not). The count
	// stops at the limit the scan was given plus one.
	Tokens int
	// Fields are the field selections written in the document: each field
	// once, wherever it is written, fragments not expanded. Every field
	// of an operation is counted once by the expanded measure
	// (CheckSelections), and every field of a fragment once for each
	// selection it is spread in, so a valid document never selects fewer
	// fields expanded than are written in it: the fields of a fragment no
	// operation uses are the only exception, and such a document fails
	// validation.
	Fields int
	// Lexed reports whether the whole text was lexed: false when the scan
	// stopped at the token limit or at a lexical error (which the parser
	// reports).
	Lexed bool
	// CommentBytes are the bytes of the comments' text, after their #.
	CommentBytes int
}

// ScanText measures query; it stops once more than maxTokens tokens have
// been seen (0: no limit).
func ScanText(query string, maxTokens int) TextMeasure { return scanText(query, maxTokens, nil) }

// WithoutComments is query with the text of each comment left out (its #
// kept), for a parser that gqlparser's lexer would otherwise walk through
// comment text rune by rune: the same tokens on the same lines and
// columns, and so the same syntax tree and the same errors. A comment
// runs to the end of its line, so no token follows it on that line, but
// for the end of the document, or a control character that the lexer
// refuses: an error there (a document that ends in a comment before it is
// complete) points to the column after the #. Otherwise only the
// positions' rune offsets from the start of the document differ
// (Position.Start and End, which neither gqlgen nor an error uses).
func WithoutComments(query string) string {
	var b strings.Builder
	b.Grow(min(len(query), 64<<10))
	scanText(query, 0, &b)
	return b.String()
}

// scanText is ScanText, which with strip writes query to it without the
// comments' text.
func scanText(query string, maxTokens int, strip *strings.Builder) (t TextMeasure) {
	copied := 0 // query[:copied] is in strip
	if strip != nil {
		defer func() { strip.WriteString(query[copied:]) }()
	}
	var (
		selDepth   int  // open selection sets
		valueDepth int  // open ( [ and object values: no field is selected inside them
		prev       byte // the previous token's kind (comments are transparent)
		onAfter    bool // prev is the name "on" right after "..."
	)
	const (
		kName   = 'n'
		kSpread = '.'
		kOther  = 'x'
	)
	q, n := query, len(query)
	i := 0
	for {
		// Whitespace, commas and byte order marks, as the lexer's ws.
	ws:
		for i < n {
			switch q[i] {
			case ' ', '\t', ',', '\n', '\r':
				i++
			case 0xef:
				if i+2 < n && q[i+1] == 0xbb && q[i+2] == 0xbf {
					i += 3
					continue
				}
				break ws
			default:
				break ws
			}
		}
		if i >= n {
			t.Lexed = true
			return t
		}
		t.Tokens++
		if maxTokens > 0 && t.Tokens > maxTokens {
			return t
		}
		c := q[i]
		kind := byte(kOther)
		switch {
		case c == '#':
			// A comment runs to the first control character but a tab.
			end := skipComment(q, i+1)
			t.CommentBytes += end - (i + 1)
			if strip != nil {
				strip.WriteString(q[copied : i+1])
				copied = end
			}
			i = end
			continue
		case c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z'):
			start := i
			for i++; i < n && isNameByte(q[i]); i++ {
			}
			kind = kName
			if valueDepth == 0 && selDepth > 0 {
				isOn := i-start == 2 && q[start:i] == "on"
				switch {
				case prev == ':' || prev == '@' || prev == kSpread || onAfter:
					// A field's name after its alias, a directive's name,
					// a fragment's name or the type of an inline fragment.
				default:
					t.Fields++
				}
				onAfter = isOn && prev == kSpread
				prev = kind
				continue
			}
		case c == '-' || (c >= '0' && c <= '9'):
			var ok bool
			if i, ok = skipNumber(q, i); !ok {
				return t
			}
		case c == '"':
			var ok bool
			if i+2 < n && q[i+1] == '"' && q[i+2] == '"' {
				i, ok = skipBlockString(q, i+3)
			} else {
				i, ok = skipString(q, i+1)
			}
			if !ok {
				return t
			}
		case c == '.':
			if i+2 >= n || q[i+1] != '.' || q[i+2] != '.' {
				return t
			}
			i += 3
			kind = kSpread
		default:
			switch c {
			case '!', '$', '&', ':', '=', '@', '|', ']', ')':
			case '(', '[':
				valueDepth++
			case '{':
				if valueDepth > 0 {
					valueDepth++
				} else {
					selDepth++
				}
			case '}':
				if valueDepth > 0 {
					valueDepth--
				} else if selDepth > 0 {
					selDepth--
				}
			default:
				return t // a character the lexer refuses
			}
			if c == ']' || c == ')' {
				valueDepth = max(valueDepth-1, 0)
			}
			i++
			kind = c
		}
		prev, onAfter = kind, false
	}
}

func isNameByte(c byte) bool {
	return c == '_' || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// SWAR constants: a byte of each value in every lane.
const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// laneLess marks (with its high bit) every byte of w below b (b ≤ 0x80),
// among bytes below 0x80; callers confirm a hit byte by byte.
func laneLess(w uint64, b byte) uint64 { return (w - lanes01*uint64(b)) & ^w & lanes80 }

// laneEq marks every byte of w equal to b, possibly with false hits above a
// true one; callers confirm byte by byte.
func laneEq(w uint64, b byte) uint64 { return laneLess(w^(lanes01*uint64(b)), 1) }

// load64 is the eight bytes of s from i, little endian.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// plainRun returns the first index at or after i where, eight bytes at a
// time, a byte below 0x20 may be, or with special also a quote or a
// backslash; the caller looks at the bytes from there one by one.
func plainRun(q string, i int, special bool) int {
	for ; i+8 <= len(q); i += 8 {
		w := load64(q, i)
		hit := laneLess(w, 0x20)
		if special {
			hit |= laneEq(w, '"') | laneEq(w, '\\')
		}
		if hit != 0 {
			return i
		}
	}
	return i
}

// skipComment returns the index of the first control character other than
// a tab at or after i (len(q) if none): where gqlparser's readComment stops.
func skipComment(q string, i int) int {
	for {
		i = plainRun(q, i, false)
		// The next eight bytes hold a control character, or q ends within them.
		end := min(i+8, len(q))
		for ; i < end; i++ {
			if c := q[i]; c < 0x20 && c != '\t' {
				return i
			}
		}
		if i >= len(q) {
			return i
		}
	}
}

// skipString skips a string's characters from i (after its opening quote)
// and its closing quote, as gqlparser's readString does; ok is false on a
// lexical error.
func skipString(q string, i int) (int, bool) {
	n := len(q)
	for i < n {
		i = plainRun(q, i, true)
		if i >= n {
			break
		}
		switch c := q[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= n {
				return i, false
			}
			switch q[i+1] {
			case '"', '/', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+2 < n && q[i+2] == '{' {
					j := i + 3
					for j < n && j-i-3 <= 8 && isHex(q[j]) {
						j++
					}
					if j >= n || q[j] != '}' || j == i+3 {
						return i, false
					}
					i = j + 1
					continue
				}
				if i+6 >= n || !isHex(q[i+2]) || !isHex(q[i+3]) || !isHex(q[i+4]) || !isHex(q[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20 && c != '\t':
			return i, false // a line terminator ends the string unterminated
		default:
			i++
		}
	}
	return i, false
}

// skipBlockString skips a block string's characters from i (after its
// opening quotes) and its closing quotes, as gqlparser's readBlockString.
func skipBlockString(q string, i int) (int, bool) {
	n := len(q)
	for i < n {
		i = plainRun(q, i, true)
		if i >= n {
			break
		}
		switch c := q[i]; {
		case c == '"':
			j := i
			for j < n && q[j] == '"' {
				j++
			}
			if j-i >= 3 {
				return j, true
			}
			i = j
		case c == '\\' && i+4 <= n && q[i+1:i+4] == `"""`:
			i += 4
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r':
			return i, false
		default:
			i++
		}
	}
	return i, false
}

// skipNumber skips a number from i, as gqlparser's readNumber.
func skipNumber(q string, i int) (int, bool) {
	n := len(q)
	digits := func() int {
		j := i
		for i < n && q[i] >= '0' && q[i] <= '9' {
			i++
		}
		return i - j
	}
	if q[i] == '-' {
		i++
	}
	if i < n && q[i] == '0' {
		i++
		if digits() != 0 {
			return i, false
		}
	} else if digits() == 0 {
		return i, false
	}
	if i < n && q[i] == '.' {
		i++
		if digits() == 0 {
			return i, false
		}
	}
	if i < n && (q[i] == 'e' || q[i] == 'E') {
		i++
		if i < n && (q[i] == '-' || q[i] == '+') {
			i++
		}
		if digits() == 0 {
			return i, false
		}
	}
	return i, true
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'f')
}
