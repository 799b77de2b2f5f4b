package resolvers

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/costgw/gateway/upstream"
)

// The contract types only a history row's cost and time column: a group-by
// value may be a number (an account id) or null. Before, every value that
// was not a string failed the whole history with UPSTREAM_BAD_RESPONSE.
func TestHistoryRowsGroupValues(t *testing.T) {
	t.Parallel()
	text := func(s string) *string { return &s }
	tests := []struct {
		name    string
		value   string // the group-by column's JSON
		want    *string
		wantErr bool
	}{
		{name: "text", value: `"Production"`, want: text("Production")},
		{name: "an account id as a number", value: `123456789012`, want: text("123456789012")},
		{name: "a number beyond float64's integers, as sent", value: `12345678901234567890`, want: text("12345678901234567890")},
		{name: "null", value: `null`, want: nil},
		{name: "a boolean", value: `true`, wantErr: true},
		{name: "an object", value: `{"id":1}`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := &upstream.ExplorerHistory{GroupBy: "line_item_usage_account_id", TimeColumn: "usage_date",
				CostRows: []upstream.HistoryRow{{
					{Name: "line_item_usage_account_id", Value: json.RawMessage(tc.value)},
					{Name: "usage_date", Value: json.RawMessage(`20260115`)},
					{Name: "cost", Value: json.RawMessage(`10.5`)},
				}}}
			rows, err := historyRows(h, false)
			if tc.wantErr {
				if !errors.Is(err, upstream.ErrBadResponse) {
					t.Fatalf("err = %v, want an ErrBadResponse", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, rows[0].Group); diff != "" {
				t.Errorf("group (-want +got):\n%s", diff)
			}
		})
	}
}
