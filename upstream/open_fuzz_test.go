package upstream

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzExtraMembers checks the top-level scan of splitOpen against decoding
// the whole object into a map: for every valid JSON object they find the
// same extra members with the same raw values.
func FuzzExtraMembers(f *testing.F) {
	for _, s := range []string{
		`{}`, ` { "a" : 1 , "b":"x" } `, `{"recommendation_id":"r","extra":{"n":[1,{"x":"}"}]}}`,
		`{"a\u0062":true,"a":null,"a":[ ]}`, `{"q":"\"{[","n":-1.5e3,"t":false}`,
		`{"anomaly_id":"a","tags":["x"],"root_cause":{"service":"EC2"}}`,
	} {
		f.Add([]byte(s))
	}
	names := jsonNames("a", "recommendation_id", "anomaly_id")
	f.Fuzz(func(t *testing.T, data []byte) {
		var all map[string]json.RawMessage
		if json.Unmarshal(data, &all) != nil || all == nil {
			return // splitOpen only scans what decoded as an object
		}
		for k := range all {
			if names[k] {
				delete(all, k)
			}
		}
		if len(all) == 0 {
			all = nil
		}
		got, err := extraMembers(data, names)
		if err != nil {
			t.Fatalf("extraMembers(%q): %v", data, err)
		}
		if diff := cmp.Diff(all, got); diff != "" {
			t.Fatalf("extraMembers(%q) (-decoded +scanned):\n%s", data, diff)
		}
	})
}
