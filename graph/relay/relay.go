// Package relay encodes the gateway's opaque global IDs and connection
// cursors, and decodes them from untrusted input.
//
// A global ID names an object for node and nodes. It is stable: clients may
// store it. It is base64url (no padding) of "<Type>:<id>" with the REST id
// query-escaped, or, for a planning row, "Planning:<budgetId>:<planningId>",
// because a planning row can only be refetched through its budget's
// planning grid.
//
// A cursor says where the next page starts in the upstream's forward-only
// list: the upstream cursor of the page it came from and how many records of
// that page to skip. Cursors are signed (HMAC-SHA-256, truncated to 128 bits)
// and bound to their connection, so a tampered cursor, or one of another
// connection, is refused instead of being sent upstream.
package relay

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Errors of untrusted input; the error presenter shows them as BAD_USER_INPUT.
var (
	ErrInvalidID     = errors.New("invalid global ID")
	ErrInvalidCursor = errors.New("invalid cursor")
)

// Object types with global IDs.
const (
	TypeBudget                = "Budget"
	TypePlanning              = "Planning"
	TypeScheduledNotification = "ScheduledNotification"
	TypeRecommendation        = "Recommendation"
	TypeAnomaly               = "Anomaly"
	TypeUser                  = "User"
	TypeExplorerReport        = "ExplorerReport"
)

// keyed are the types whose global ID holds one REST id.
var keyed = map[string]bool{TypeBudget: true, TypeScheduledNotification: true, TypeRecommendation: true,
	TypeAnomaly: true, TypeUser: true, TypeExplorerReport: true}

// maxInput bounds what is decoded at all; real IDs and cursors are far shorter.
const maxInput = 1024

var b64 = base64.RawURLEncoding

// ID is a decoded global ID.
type ID struct {
	Type       string // one of the Type constants
	Key        string // the REST id of an object of a keyed type (a budget's too)
	BudgetID   string // the upstream budget id: a budget's, or a planning row's budget's
	PlanningID string // the upstream planning id, for TypePlanning
}

// NodeID returns the global ID of the object of type typ (not Planning)
// whose REST id is key.
func NodeID(typ, key string) string {
	return encodeID(typ, url.QueryEscape(key))
}

// BudgetID returns the global ID of a budget.
func BudgetID(budgetID string) string { return NodeID(TypeBudget, budgetID) }

// PlanningID returns the global ID of a planning row of a budget.
func PlanningID(budgetID, planningID string) string {
	return encodeID(TypePlanning, url.QueryEscape(budgetID), url.QueryEscape(planningID))
}

// encodeID returns the base64 of its parts joined by ':'. Both steps are in
// buffers on the stack for IDs of usual length, so the string is the one
// allocation: a page of budgets has an ID for each of them and of their
// planning rows.
func encodeID(parts ...string) string {
	var rawBuf [96]byte
	raw := rawBuf[:0]
	for i, p := range parts {
		if i > 0 {
			raw = append(raw, ':')
		}
		raw = append(raw, p...)
	}
	var encBuf [128]byte
	return string(b64.AppendEncode(encBuf[:0], raw))
}

// ParseID decodes a global ID. Anything that is not one this package made is
// ErrInvalidID; the message never echoes more than the input's length.
func ParseID(s string) (ID, error) {
	if s == "" || len(s) > maxInput {
		return ID{}, fmt.Errorf("%w: it must be an ID this API returned", ErrInvalidID)
	}
	raw, err := decodeCanonical(s)
	if err != nil {
		return ID{}, fmt.Errorf("%w: it must be an ID this API returned", ErrInvalidID)
	}
	parts := strings.Split(string(raw), ":")
	unescape := func(p string) (string, bool) {
		v, err := url.QueryUnescape(p)
		return v, err == nil && v != "" && url.QueryEscape(v) == p
	}
	switch {
	case len(parts) == 2 && keyed[parts[0]]:
		if k, ok := unescape(parts[1]); ok {
			id := ID{Type: parts[0], Key: k}
			if id.Type == TypeBudget {
				id.BudgetID = k
			}
			return id, nil
		}
	case len(parts) == 3 && parts[0] == TypePlanning:
		b, ok1 := unescape(parts[1])
		p, ok2 := unescape(parts[2])
		if ok1 && ok2 {
			return ID{Type: TypePlanning, BudgetID: b, PlanningID: p}, nil
		}
	}
	return ID{}, fmt.Errorf("%w: it must be an ID this API returned", ErrInvalidID)
}

// decodeCanonical decodes s only if it is the one encoding of its bytes.
// The decoder alone also takes CR and LF anywhere and ignores the unused low
// bits of the last character, so several strings would name one ID or
// cursor, and a changed cursor character could go unnoticed.
func decodeCanonical(s string) ([]byte, error) {
	raw, err := b64.DecodeString(s)
	if err != nil {
		return nil, err
	}
	var buf [128]byte
	if string(b64.AppendEncode(buf[:0], raw)) != s {
		return nil, errors.New("not in canonical form")
	}
	return raw, nil
}

// Cursor is a decoded connection cursor: the next page starts at the
// upstream page fetched with Upstream ("" for the first page), after
// skipping Skip of its records.
type Cursor struct {
	Upstream string
	Skip     int
}

// Codec signs and checks cursors.
type Codec struct{ key []byte }

// NewCodec returns a codec signing with secret. An empty secret gets a random
// one, so cursors then stay valid only for the life of the process.
func NewCodec(secret []byte) *Codec {
	if len(secret) == 0 {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret) // crypto/rand.Read never fails (Go 1.24+)
	}
	return &Codec{key: append([]byte(nil), secret...)}
}

const (
	cursorVersion = 1
	macLen        = 16
	// MaxSkip bounds Skip: an upstream page never holds more records.
	MaxSkip = 200
)

// Encode returns the cursor for connection conn (such as "budgets").
func (c *Codec) Encode(conn string, cur Cursor) string {
	buf := make([]byte, 0, 1+binary.MaxVarintLen64+len(cur.Upstream)+macLen)
	buf = append(buf, cursorVersion)
	buf = binary.AppendUvarint(buf, uint64(cur.Skip))
	buf = append(buf, cur.Upstream...)
	buf = append(buf, c.mac(conn, buf)...)
	return b64.EncodeToString(buf)
}

// Decode checks and decodes a cursor of connection conn.
func (c *Codec) Decode(conn, s string) (Cursor, error) {
	bad := fmt.Errorf("%w: use a cursor this connection returned", ErrInvalidCursor)
	if s == "" || len(s) > maxInput {
		return Cursor{}, bad
	}
	raw, err := decodeCanonical(s)
	if err != nil || len(raw) < 2+macLen {
		return Cursor{}, bad
	}
	body, sum := raw[:len(raw)-macLen], raw[len(raw)-macLen:]
	if !hmac.Equal(sum, c.mac(conn, body)) || body[0] != cursorVersion {
		return Cursor{}, bad
	}
	skip, n := binary.Uvarint(body[1:])
	if n <= 0 || skip > MaxSkip {
		return Cursor{}, bad
	}
	return Cursor{Upstream: string(body[1+n:]), Skip: int(skip)}, nil
}

func (c *Codec) mac(conn string, body []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(conn))
	m.Write([]byte{0})
	m.Write(body)
	return m.Sum(nil)[:macLen]
}
