package upstream

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzScrub feeds arbitrary upstream text to the scrubber: whatever comes
// out is short, valid UTF-8 without control characters, and holds neither
// the key, nor the upstream's host, nor anything URL-like; and so is what
// requestID keeps of it.
func FuzzScrub(f *testing.F) {
	const key, host = "sk-live-0123456789abcdef", "api.internal.example:8443"
	for _, s := range []string{
		"Budget not found", "API key is missing required scope: budgets:write",
		"no budget at http://api.internal.example:8443/v1/budgets/x?y=1",
		"Authorization: Bearer sk-live-0123456789abcdef\r\nHost: api.internal.example:8443\r\n",
		"SK-LIVE-0123456789ABCDEF", "dial tcp 10.0.0.7:443: connect: connection refused",
		"lookup API.INTERNAL.EXAMPLE on [fe80::1]:53: no such host", "bearer=sk-live-0123456789abcdef",
		"sk-live-0123456789abcdefsk-live-0123456789abcdef", "x\x00y\u2028z\xff", "h://", "api.internal.example",
		"req_01HZX3", "550e8400-e29b-41d4-a716-446655440000", "req-SK-LIVE-0123456789ABCDEF", "authorization:x",
		"Host=1", "id-10.0.0.7:443", "API.INTERNAL.EXAMPLE:8443", "a.b:c_d-e",
	} {
		f.Add(s)
	}
	sc := newScrubber(key, host)
	f.Fuzz(func(t *testing.T, in string) {
		out := sc.text(in, maxMessageLen, "withheld")
		if len(out) > maxMessageLen {
			t.Fatalf("%d bytes out, cap %d", len(out), maxMessageLen)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out: %q", out)
		}
		low := strings.ToLower(out)
		for _, bad := range []string{strings.ToLower(key), "api.internal.example", "://"} {
			if strings.Contains(low, bad) {
				t.Fatalf("text(%q) = %q holds %q", in, out, bad)
			}
		}
		for _, r := range out {
			if unicode.IsControl(r) {
				t.Fatalf("text(%q) = %q holds a control character", in, out)
			}
		}
		if tok := token(out, 64, ""); tok != "" && tok != out {
			t.Fatalf("token(%q) = %q", out, tok)
		}
		// A request id is kept escaped: tokens and escapes only, short,
		// and without the key, the host or a URL.
		id := sc.requestID(in)
		if len(id) > maxRequestIDLen {
			t.Fatalf("requestID(%q) is %d bytes, cap %d", in, len(id), maxRequestIDLen)
		}
		if low := strings.ToLower(id); strings.Contains(low, strings.ToLower(key)) || strings.Contains(low, "api.internal.example") {
			t.Fatalf("requestID(%q) = %q holds the key or the host", in, id)
		}
		for i := 0; i < len(strings.TrimSuffix(id, "…")); i++ {
			if c := id[i]; !isTokenByte(c) && c != '%' {
				t.Fatalf("requestID(%q) = %q holds %q", in, id, c)
			}
		}
		// The short way for a token keeps or drops it as the full way does.
		if fast, ok := sc.tokenRequestID(in); ok {
			if full := sc.escapedRequestID(in); fast != full {
				t.Fatalf("requestID(%q): %q the short way, %q the full way", in, fast, full)
			}
		}
	})
}
