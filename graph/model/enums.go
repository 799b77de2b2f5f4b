package model

import (
	"io"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"

	"github.com/costgw/gateway/graph/codes"
)

// Enum maps a GraphQL enum's values to the strings the upstream sends, for
// the enums bound to functions in gqlgen.yml: the records keep the
// upstream's strings, and only marshalling maps them. A string the upstream
// adds later reads as UNKNOWN (its …Raw sibling field has the string). The
// contract leaves every one of these sets open, so an input that takes one
// has a …Raw sibling too, for a string the enum does not list.
type Enum struct {
	// Name is the GraphQL enum's name.
	Name string
	// Values maps each GraphQL value to its upstream string.
	Values map[string]string

	out   map[string]enumOut // lower-cased upstream string → its value
	exact map[string]enumOut // the upstream string as listed → its value
}

// enumOut is a GraphQL value, quoted, as a Marshaler and as text to append.
type enumOut struct {
	m      graphql.Marshaler
	quoted string
}

// unknownValue is the member of output enums that stands for any string the
// schema does not know yet.
const unknownValue = "UNKNOWN"

func newEnum(name string, pairs ...string) *Enum {
	e := &Enum{Name: name, Values: map[string]string{}, out: map[string]enumOut{}, exact: map[string]enumOut{}}
	for i := 0; i+1 < len(pairs); i += 2 {
		e.Values[pairs[i]] = pairs[i+1]
		o := quoted(pairs[i])
		e.out[strings.ToLower(pairs[i+1])] = o
		e.exact[pairs[i+1]] = o
	}
	return e
}

func quoted(s string) enumOut {
	q := strconv.Quote(s)
	return enumOut{graphql.WriterFunc(func(w io.Writer) { _, _ = io.WriteString(w, q) }), q}
}

var unknownOut = quoted(unknownValue)

// value returns the GraphQL value of an upstream string, matched without
// regard to case (lower-casing it only when it is not as listed); UNKNOWN
// for one it does not know.
func (e *Enum) value(v string) enumOut {
	if o, ok := e.exact[v]; ok {
		return o
	}
	if o, ok := e.out[strings.ToLower(v)]; ok {
		return o
	}
	return unknownOut
}

// marshal writes the GraphQL value of an upstream string.
func (e *Enum) marshal(v string) graphql.Marshaler { return e.value(v).m }

// append appends what marshal writes, for the executor's record leaves.
func (e *Enum) append(b []byte, v string) []byte { return append(b, e.value(v).quoted...) }

// unmarshal returns the upstream string of a GraphQL value. UNKNOWN stands
// for what the schema does not know, so it cannot be sent: the input's …Raw
// sibling takes the string itself.
func (e *Enum) unmarshal(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", codes.Errorf(codes.BadUserInput, "%s must be one of its values, got %s", e.Name, kind(v))
	}
	if w, ok := e.Values[s]; ok {
		return w, nil
	}
	if s == unknownValue {
		return "", codes.Errorf(codes.BadUserInput, "%s UNKNOWN stands for values this schema does not know; it cannot be sent: send the string itself in the input field of the same name ending in Raw", e.Name)
	}
	return "", codes.Errorf(codes.BadUserInput, "%q is not a value of %s", s, e.Name)
}

// Enums lists every enum bound to functions, for the test that holds them
// to the schema.
var Enums = []*Enum{budgetStatus, targetType, budgetPeriod, implementationEffort, detectionSource, scheduleType,
	recurrenceFrequency, notificationStatus}

var (
	budgetStatus         = newEnum("BudgetStatus", "DRAFT", "DRAFT", "ACTIVE", "ACTIVE")
	targetType           = newEnum("TargetType", "BUDGET", "BUDGET", "PLANNING_ITEM", "PLANNING_ITEM")
	budgetPeriod         = newEnum("BudgetPeriod", "MONTHLY", "MONTHLY", "QUARTERLY", "QUARTERLY", "YEARLY", "YEARLY")
	implementationEffort = newEnum("ImplementationEffort", "LOW", "Low", "MEDIUM", "Medium", "HIGH", "High")
	detectionSource      = newEnum("DetectionSource", "AWS", "aws")
	scheduleType         = newEnum("ScheduleType", "RECURRING", "recurring")
	recurrenceFrequency  = newEnum("RecurrenceFrequency", "DAILY", "daily", "WEEKLY", "weekly", "MONTHLY", "monthly")
	notificationStatus   = newEnum("NotificationStatus", "PENDING", "pending", "SENT", "sent", "FAILED", "failed")
)

// The gqlgen bindings of the enums: each marshals an upstream string and
// unmarshals an input value to one.

func MarshalBudgetStatus(v string) graphql.Marshaler         { return budgetStatus.marshal(v) }
func UnmarshalBudgetStatus(v any) (string, error)            { return budgetStatus.unmarshal(v) }
func MarshalTargetType(v string) graphql.Marshaler           { return targetType.marshal(v) }
func UnmarshalTargetType(v any) (string, error)              { return targetType.unmarshal(v) }
func MarshalBudgetPeriod(v string) graphql.Marshaler         { return budgetPeriod.marshal(v) }
func UnmarshalBudgetPeriod(v any) (string, error)            { return budgetPeriod.unmarshal(v) }
func MarshalImplementationEffort(v string) graphql.Marshaler { return implementationEffort.marshal(v) }
func UnmarshalImplementationEffort(v any) (string, error)    { return implementationEffort.unmarshal(v) }
func MarshalDetectionSource(v string) graphql.Marshaler      { return detectionSource.marshal(v) }
func UnmarshalDetectionSource(v any) (string, error)         { return detectionSource.unmarshal(v) }
func MarshalScheduleType(v string) graphql.Marshaler         { return scheduleType.marshal(v) }
func UnmarshalScheduleType(v any) (string, error)            { return scheduleType.unmarshal(v) }
func MarshalRecurrenceFrequency(v string) graphql.Marshaler  { return recurrenceFrequency.marshal(v) }
func UnmarshalRecurrenceFrequency(v any) (string, error)     { return recurrenceFrequency.unmarshal(v) }
func MarshalNotificationStatus(v string) graphql.Marshaler   { return notificationStatus.marshal(v) }
func UnmarshalNotificationStatus(v any) (string, error)      { return notificationStatus.unmarshal(v) }

// The executor's appenders of the enums (internal/gqlgen): each appends what
// its Marshal function writes.

func AppendBudgetStatus(b []byte, v string) []byte         { return budgetStatus.append(b, v) }
func AppendTargetType(b []byte, v string) []byte           { return targetType.append(b, v) }
func AppendBudgetPeriod(b []byte, v string) []byte         { return budgetPeriod.append(b, v) }
func AppendImplementationEffort(b []byte, v string) []byte { return implementationEffort.append(b, v) }
func AppendDetectionSource(b []byte, v string) []byte      { return detectionSource.append(b, v) }
func AppendScheduleType(b []byte, v string) []byte         { return scheduleType.append(b, v) }
func AppendRecurrenceFrequency(b []byte, v string) []byte  { return recurrenceFrequency.append(b, v) }
func AppendNotificationStatus(b []byte, v string) []byte   { return notificationStatus.append(b, v) }
