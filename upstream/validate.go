package upstream

import (
	"errors"
	"fmt"
	"strconv"
)

// Every header value the client sends is checked before anything is sent,
// so that a value Go's transport would refuse, or one the upstream would
// read differently from what was meant, is the caller's error, named as
// such: never a request that fails on the way out and is taken for an
// upstream failure (retried, counted by a circuit breaker, charged to the
// retry quota).

// MaxIdempotencyKeyLen is the contract's limit on the Idempotency-Key
// header: 64 characters. Keys are printable ASCII, so characters and bytes
// are the same count.
const MaxIdempotencyKeyLen = 64

// MaxAPIKeyLen bounds the bearer key the client sends. Real keys are far
// shorter; a longer one can only be a mistake or an attempt to make every
// upstream call carry a large header.
const MaxAPIKeyLen = 4096

// CheckIdempotencyKey returns why k cannot be an Idempotency-Key, or nil:
// the rule the client applies before sending a write, for a server to tell
// its caller first.
func CheckIdempotencyKey(k string) error {
	if reason := checkIdempotencyKey(k); reason != "" {
		return errors.New(reason)
	}
	return nil
}

// checkIdempotencyKey returns why k cannot be an Idempotency-Key, or "".
//
// A key is 1 to 64 printable ASCII characters (0x21–0x7E), with spaces
// allowed between them but not at either end: HTTP strips white space
// around a header value, so "k " would reach the upstream as "k" and a
// retry with the caller's "k " would look like another key to the caller.
// Anything outside ASCII is refused rather than sent as raw bytes whose
// reading depends on the upstream's HTTP stack.
func checkIdempotencyKey(k string) string {
	switch {
	case k == "":
		return "Idempotency-Key is empty"
	case len(k) > MaxIdempotencyKeyLen:
		return fmt.Sprintf("Idempotency-Key is %d characters; at most %d are allowed", len(k), MaxIdempotencyKeyLen)
	case k[0] == ' ' || k[len(k)-1] == ' ':
		return "Idempotency-Key starts or ends with a space"
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c > 0x7E {
			return "Idempotency-Key holds a character outside printable ASCII at position " + strconv.Itoa(i+1)
		}
	}
	return ""
}

// ValidAPIKey reports whether key can be sent as a bearer credential: 1 to
// MaxAPIKeyLen printable ASCII characters (0x21–0x7E), no spaces. The client
// refuses any other key before sending, with an *Error matching
// ErrUnauthorized (code malformed_api_key); a server may call it to refuse
// such a key at the door.
func ValidAPIKey(key string) bool { return checkAPIKey(key) == "" }

// checkAPIKey returns why key cannot be a bearer key, or "". The reason
// never quotes the key.
func checkAPIKey(key string) string {
	if key == "" {
		return "the API key is empty"
	}
	if len(key) > MaxAPIKeyLen {
		return fmt.Sprintf("the API key is %d bytes; at most %d are allowed", len(key), MaxAPIKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= 0x20 || c > 0x7E {
			return "the API key holds a space, a control character or a character outside ASCII"
		}
	}
	return ""
}

// checkHeaderValue returns why v cannot be sent as a header value: a
// control character (other than tab) or a byte outside ASCII.
func checkHeaderValue(name, v string) error {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c > 0x7E {
			return fmt.Errorf("upstream: the %s header value holds a control character or a character outside ASCII", name)
		}
	}
	return nil
}
