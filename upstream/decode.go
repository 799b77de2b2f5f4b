package upstream

import (
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// The client decodes answers with the JSON v2 engine set to the semantics of
// encoding/json (v1): the same values and the same tolerance (names matched
// without regard to case, duplicate names, invalid UTF-8 replaced), at a
// fraction of the cost; only the wording of a decoding error differs, and
// that stays inside an ErrBadResponse. Decoding upstream answers is much of
// the work of a query; see docs/benchmarks.md.
var v1Semantics = jsonv1.DefaultOptionsV1()

// unmarshalRead decodes the JSON value that r holds into v.
func unmarshalRead(r io.Reader, v any) error { return jsonv2.UnmarshalRead(r, v, v1Semantics) }

// unmarshal decodes the JSON value data into v.
func unmarshal(data []byte, v any) error { return jsonv2.Unmarshal(data, v, v1Semantics) }

// decodeAnswer decodes a success answer from r into env.
func decodeAnswer(r io.Reader, env answerEnvelope) error { return unmarshalRead(r, env) }
