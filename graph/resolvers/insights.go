package resolvers

import "encoding/json"

// extra encodes the extra members of an open object, or nil when it has none.
func extra(m map[string]json.RawMessage) (json.RawMessage, error) {
	if len(m) == 0 {
		return nil, nil
	}
	return json.Marshal(m)
}
