package upstream

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzHistoryRows decodes a history whose cost rows are the input, as the
// client reads an answer, and checks the rows against encoding/json's
// reading of the same array into maps: every column with the value a map
// keeps for its name, and the same object written again.
func FuzzHistoryRows(f *testing.F) {
	f.Add(`[{"product_product_name":"Amazon EC2","usage_date":20260531,"cost":12.5}]`)
	f.Add(`[{"a":1,"a":2},{},{"b":{"c":[1,2]}, "d" : "x\u00e9"}]`)
	f.Add(`[{"g":null,"usage_date":20260531.0,"cost":-1e3},{"g":123456789012,"usage_date":2.0260531e7,"cost":0}]`)
	f.Add(`[{"` + strings.Repeat("x", 40) + `":"` + strings.Repeat("y", 9000) + `"}]`)
	f.Fuzz(func(t *testing.T, rows string) {
		var want []map[string]json.RawMessage
		if json.Unmarshal([]byte(rows), &want) != nil || want == nil || !json.Valid([]byte(rows)) {
			return
		}
		for _, m := range want {
			if m == nil {
				return // a null row, which the client refuses
			}
		}
		body := `{"data":{"costRows":` + rows + `,"totalsByTimeRows":[],"usageRows":[],"usageGroupRows":[],` +
			`"timeColumn":"usage_date","groupBy":"g","servedFromCache":false}}`
		env := new(envelope[ExplorerHistory])
		if err := decodeAnswer(strings.NewReader(body), env); err != nil {
			t.Fatalf("the client refused rows encoding/json reads: %v\n%s", err, rows)
		}
		got := env.Data.CostRows
		if len(got) != len(want) {
			t.Fatalf("%d rows, want %d", len(got), len(want))
		}
		for i, m := range want {
			for name, v := range m {
				c, ok := got[i].Column(name)
				if !ok || !bytes.Equal(compact(t, c), compact(t, v)) {
					t.Fatalf("row %d column %q = %s, %v; want %s", i, name, c, ok, v)
				}
			}
			a, err := json.Marshal(got[i])
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(m)
			if !bytes.Equal(a, b) {
				t.Fatalf("row %d written again as %s, want %s", i, a, b)
			}
		}
	})
}

func compact(t *testing.T, v []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		t.Fatalf("%s: %v", v, err)
	}
	return b.Bytes()
}
