package upstream

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Everything the upstream says travels further than the upstream's own
// reach: error messages become GraphQL error messages, request ids become
// error extensions, body excerpts and transport errors become log lines. An
// upstream that echoes what it was sent, or describes its own insides, must
// not carry into them the caller's key, the upstream's address or the
// headers of the request. scrubber removes those; it is the one place that
// does, for every kind of text.

// maxMessageLen caps an error message taken from the upstream: enough for
// any sentence the contract's messages hold ("API key is missing required
// scope: budgets:write"), too little to smuggle a page.
const maxMessageLen = 300

// maxRequestIDLen caps a request id, escaped: the contract's are UUIDs (36
// characters).
const maxRequestIDLen = 128

// maxExcerptLen caps the body excerpt a log line carries.
const maxExcerptLen = 256

// scrubber removes the bearer key, the upstream's address and anything that
// looks like a URL or a request header from a text.
type scrubber struct {
	key   string // the bearer key of the call; "" when none
	hosts []string
}

// newScrubber returns a scrubber for a call with key to the upstream at host
// (host or host:port of the base URL).
func newScrubber(key, host string) scrubber {
	s := scrubber{key: key}
	if host != "" {
		s.hosts = append(s.hosts, host)
		if h, _, ok := cutPort(host); ok && h != "" {
			s.hosts = append(s.hosts, h)
		}
	}
	return s
}

// cutPort splits host:port (or [v6]:port); ok is false when there is no port.
func cutPort(hostport string) (host, port string, ok bool) {
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 || strings.IndexByte(hostport[i:], ']') >= 0 {
		return hostport, "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport[:i], "["), "]"), hostport[i+1:], true
}

// sensitiveHeaders are header names whose echo is cut out of a text. Header
// names the gateway sends are all here, and the ones proxies add.
var sensitiveHeaders = []string{
	"authorization", "proxy-authorization", "cookie", "set-cookie", "host", "user-agent",
	"idempotency-key", "x-forwarded-for", "x-forwarded-host", "x-real-ip", "forwarded", "via",
	"x-api-key", "referer", "origin", "x-amzn-trace-id", "traceparent", "tracestate",
}

// text returns s without the key, the upstream's address, URLs, header
// echoes and control characters, at most max bytes long (cut at a rune
// boundary, marked with …). A text that still holds any of them after
// scrubbing (they can hide inside each other) is replaced by fallback.
func (s scrubber) text(in string, max int, fallback string) string {
	out := in
	if s.key != "" {
		out = replaceFold(out, s.key, "[redacted]")
	}
	out = cutHeaderEchoes(out)
	out = cutBearer(out)
	out = cutURLs(out)
	for _, h := range s.hosts {
		out = replaceFold(out, h, "[upstream]")
	}
	out = cutAddresses(out)
	out = cleanControls(out)
	out = strings.TrimSpace(out)
	if len(out) > max {
		cut := max - len("…")
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut] + "…"
	}
	if !s.clean(out) {
		return fallback
	}
	return out
}

// clean reports whether t holds none of what text removes.
func (s scrubber) clean(t string) bool {
	if s.key != "" && containsFold(t, s.key) {
		return false
	}
	for _, h := range s.hosts {
		if containsFold(t, h) {
			return false
		}
	}
	if strings.Contains(t, "://") || !utf8.ValidString(t) {
		return false
	}
	for _, r := range t {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// requestID returns the upstream's request id fit to travel into errors
// and log lines. The id is what the upstream's operators find a call by,
// so it is kept whatever its characters: each byte outside letters, digits
// and ._:- is percent-escaped (so no line break, quote or bracket passes as
// such, and the id can be read back exactly), '%' included; the result is
// at most maxRequestIDLen bytes, a longer one cut and marked with …. An id
// from which text would remove anything but white space (the key, the
// upstream's address, a URL, a header echo, an IP address) is no id to
// pass on: it is dropped, and so is one that still holds any of them once
// escaped.
func (s scrubber) requestID(id string) string {
	id = strings.TrimSpace(id)
	if plain, ok := s.tokenRequestID(id); ok {
		return plain
	}
	return s.escapedRequestID(id)
}

// escapedRequestID is requestID for any id, trimmed.
func (s scrubber) escapedRequestID(id string) string {
	if id == "" || s.text(id, len(id), "") != strings.TrimSpace(cleanControls(id)) {
		return ""
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(id))
	for i := 0; i < len(id); i++ {
		if c := id[i]; isTokenByte(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	if len(b) > maxRequestIDLen {
		cut := maxRequestIDLen - len("…")
		// Every '%' starts an escape (a '%' of the id is escaped too):
		// cut before it rather than inside it.
		if b[cut-1] == '%' {
			cut--
		} else if b[cut-2] == '%' {
			cut -= 2
		}
		b = append(b[:cut], "…"...)
	}
	out := string(b)
	if !s.clean(out) || cutAddresses(out) != out {
		return ""
	}
	return out
}

// tokenRequestID is requestID for the usual id, a short token of letters,
// digits and ._:- (ok reports that id is one), without the scans and
// copies of text, which would cost every answer: of what text removes, a token can hold only the key, the
// upstream's host, a sensitive header's name followed by ':' and an IP
// address, so an id holding none of them is kept as it is, and one holding
// any is dropped, as requestID drops it.
func (s scrubber) tokenRequestID(id string) (string, bool) {
	if token(id, maxRequestIDLen, "") == "" {
		return "", false
	}
	if s.key != "" && containsFold(id, s.key) {
		return "", true
	}
	for _, h := range s.hosts {
		if containsFold(id, h) {
			return "", true
		}
	}
	if cutHeaderEchoes(id) != id || cutAddresses(id) != id {
		return "", true
	}
	return id, true
}

// containsFoldASCII reports whether s holds sub without regard to ASCII case; both
// are ASCII. It allocates nothing.
func containsFoldASCII(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// token returns s when it is a short token of letters, digits and ._:-
// (the shape of error codes and request ids), else fallback.
func token(s string, max int, fallback string) string {
	if s == "" || len(s) > max {
		return fallback
	}
	for i := 0; i < len(s); i++ {
		if !isTokenByte(s[i]) {
			return fallback
		}
	}
	return s
}

// isTokenByte reports whether c may stand in a token as it is.
func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':'
}

// replaceFold replaces every case-insensitive occurrence of old in s.
func replaceFold(s, old, repl string) string {
	if old == "" {
		return s
	}
	ls, lo := strings.ToLower(s), strings.ToLower(old)
	if len(ls) != len(s) || len(lo) != len(old) {
		// Case folding changed byte lengths (rare runes): fall back to an
		// exact replacement, and let clean judge the result.
		return strings.ReplaceAll(s, old, repl)
	}
	var b strings.Builder
	for {
		i := strings.Index(ls, lo)
		if i < 0 {
			break
		}
		b.WriteString(s[:i])
		b.WriteString(repl)
		s, ls = s[i+len(old):], ls[i+len(old):]
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(s)
	return b.String()
}

// containsFold reports whether s holds sub without regard to case: with no
// copy when both are ASCII (every request id and most messages), where
// lowering is ASCII's.
func containsFold(s, sub string) bool {
	if isASCII(s) && isASCII(sub) {
		return containsFoldASCII(s, sub)
	}
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub)) || strings.Contains(s, sub)
}

// cutHeaderEchoes removes "Name: value" where Name is a sensitive header
// name; the value runs to the end of its line or to a ';' or ','.
func cutHeaderEchoes(s string) string {
	ls := strings.ToLower(s)
	if len(ls) != len(s) {
		return s // rune lengths changed; clean() still judges the result
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if i > 0 && isHeaderNameByte(s[i-1]) {
			continue // only at the start of a word
		}
		for _, h := range sensitiveHeaders {
			if !strings.HasPrefix(ls[i:], h) {
				continue
			}
			j := i + len(h)
			for j < len(s) && s[j] == ' ' {
				j++
			}
			if j >= len(s) || (s[j] != ':' && s[j] != '=') {
				continue
			}
			k := j + 1
			for k < len(s) && s[k] != '\n' && s[k] != '\r' && s[k] != ';' && s[k] != ',' {
				k++
			}
			b.WriteString(s[last:i])
			b.WriteString("[header]")
			last, i = k, k-1
			break
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isHeaderNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// cutBearer replaces the credential after "Bearer ".
func cutBearer(s string) string {
	ls := strings.ToLower(s)
	if len(ls) != len(s) {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; ; {
		j := strings.Index(ls[i:], "bearer")
		if j < 0 {
			break
		}
		start := i + j + len("bearer")
		k := start
		for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
			k++
		}
		end := k
		for end < len(s) && s[end] > ' ' && s[end] != '"' && s[end] != '\'' {
			end++
		}
		if k > start && end > k {
			b.WriteString(s[last:start])
			b.WriteString(" [redacted]")
			last = end
		}
		i = max(end, start)
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// cutURLs replaces anything of the form scheme://… (up to white space or a
// quote) with [url].
func cutURLs(s string) string {
	var b strings.Builder
	last := 0
	for {
		i := strings.Index(s[last:], "://")
		if i < 0 {
			break
		}
		i += last
		start := i
		for start > last && isSchemeByte(s[start-1]) {
			start--
		}
		end := i + 3
		for end < len(s) && s[end] > ' ' && s[end] != '"' && s[end] != '\'' && s[end] != '<' && s[end] != '>' {
			end++
		}
		b.WriteString(s[last:start])
		b.WriteString("[url]")
		last = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// cutAddresses replaces IPv4 addresses (with a port, if any) and bracketed
// IPv6 addresses: transport errors name the address they dialled.
func cutAddresses(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if i > 0 && (isDigit(s[i-1]) || s[i-1] == '.') {
			continue
		}
		end := 0
		if s[i] == '[' {
			j := strings.IndexByte(s[i:], ']')
			if j > 2 && strings.Count(s[i:i+j], ":") >= 2 && isHex(s[i+1:i+j]) {
				end = i + j + 1
			}
		} else if isDigit(s[i]) {
			end = ipv4End(s, i)
		}
		if end == 0 {
			continue
		}
		if end < len(s)-1 && s[end] == ':' && isDigit(s[end+1]) {
			end++
			for end < len(s) && isDigit(s[end]) {
				end++
			}
		}
		b.WriteString(s[last:i])
		b.WriteString("[address]")
		last, i = end, end-1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// ipv4End returns the end of a dotted quad starting at i, or 0.
func ipv4End(s string, i int) int {
	for part := 0; part < 4; part++ {
		n := 0
		for i < len(s) && isDigit(s[i]) && n < 3 {
			i++
			n++
		}
		if n == 0 {
			return 0
		}
		if part < 3 {
			if i >= len(s) || s[i] != '.' {
				return 0
			}
			i++
		}
	}
	if i < len(s) && (isDigit(s[i]) || s[i] == '.' && i+1 < len(s) && isDigit(s[i+1])) {
		return 0 // a longer number: a version, not an address
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == ':' || c == '[' || c == '.') {
			return false
		}
	}
	return true
}

// cleanControls turns control characters (line breaks included, which could
// forge log lines) and invalid UTF-8 into spaces.
func cleanControls(s string) string {
	ok := utf8.ValidString(s)
	if ok {
		for _, r := range s {
			if unicode.IsControl(r) {
				ok = false
				break
			}
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, " ") {
		if unicode.IsControl(r) || r == utf8.RuneError {
			r = ' '
		}
		b.WriteRune(r)
	}
	return b.String()
}
