// Package model holds the GraphQL models that are not the upstream's own
// records, and the marshalers of the custom scalars.
package model

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"github.com/costgw/gateway/graph/codes"
	"github.com/costgw/gateway/upstream"
)

// Node is the Go side of the GraphQL Node interface. Its implementors are
// the upstream records *upstream.Budget and *upstream.Planning, which know
// nothing of GraphQL, so the interface asks for no methods.
type Node any

// MarshalDate prints a Date scalar as YYYY-MM-DD.
func MarshalDate(d upstream.Date) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		_, _ = io.WriteString(w, strconv.Quote(d.String()))
	})
}

// UnmarshalDate accepts only a YYYY-MM-DD string of a real calendar date.
func UnmarshalDate(v any) (upstream.Date, error) {
	s, ok := v.(string)
	if !ok {
		return upstream.Date{}, codes.Errorf(codes.BadUserInput, "Date must be a YYYY-MM-DD string, got %s", kind(v))
	}
	d, err := upstream.ParseDate(s)
	if err != nil {
		return upstream.Date{}, codes.Errorf(codes.BadUserInput, "Date %s", strings.TrimPrefix(err.Error(), "date "))
	}
	return d, nil
}

// MarshalDateTime prints a DateTime scalar in the contract's form,
// 2006-01-02T15:04:05.000Z.
func MarshalDateTime(t upstream.Timestamp) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		_, _ = io.WriteString(w, strconv.Quote(t.String()))
	})
}

// UnmarshalDateTime accepts only the contract's form: UTC, milliseconds, Z.
func UnmarshalDateTime(v any) (upstream.Timestamp, error) {
	s, ok := v.(string)
	if !ok {
		return upstream.Timestamp{}, codes.Errorf(codes.BadUserInput, "DateTime must be a string, got %s", kind(v))
	}
	return ParseDateTime(s)
}

// ParseDateTime parses exactly 2006-01-02T15:04:05.000Z.
func ParseDateTime(s string) (upstream.Timestamp, error) {
	if len(s) != len(upstream.TimestampLayout) {
		return upstream.Timestamp{}, codes.Errorf(codes.BadUserInput, "DateTime %q is not of the form 2006-01-02T15:04:05.000Z", s)
	}
	t, err := time.Parse(upstream.TimestampLayout, s)
	// time.Parse also takes a comma and a signed number as the fraction
	// (",000", ".+00"); only the string it prints back is the contract's form.
	if err != nil || t.Format(upstream.TimestampLayout) != s {
		return upstream.Timestamp{}, codes.Errorf(codes.BadUserInput, "DateTime %q is not a valid instant of the form 2006-01-02T15:04:05.000Z", s)
	}
	return upstream.Timestamp{Time: t}, nil
}

// MarshalJSONValue prints a JSON scalar: raw JSON is written as it came,
// without decoding; nothing or the literal null prints null.
func MarshalJSONValue(v json.RawMessage) graphql.Marshaler {
	if len(v) == 0 || string(v) == "null" {
		return graphql.Null
	}
	return graphql.WriterFunc(func(w io.Writer) { _, _ = w.Write(v) })
}

// UnmarshalJSONValue accepts any input value and returns it as raw JSON.
func UnmarshalJSONValue(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, codes.Errorf(codes.BadUserInput, "JSON value cannot be encoded: %v", err)
	}
	return b, nil
}

// kind names the GraphQL kind of an input value for error messages, without
// echoing the value.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	default:
		return "a number"
	}
}

// Explorer is the root of the Explorer queries; it holds nothing, and each of
// its fields is one upstream call.
type Explorer struct{}
