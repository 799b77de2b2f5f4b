package resolvers

import "testing"

// The executor asks the root for an object's resolver for every field it
// resolves with one (each planning row's id, each recommendation's extra):
// handing it out allocates nothing (internal/gqlgen/resolver.gotpl).
func TestObjectResolversAllocateNothing(t *testing.T) {
	r := &Resolver{}
	n := testing.AllocsPerRun(100, func() {
		resolverSink = r.Budget()
		resolverSink = r.Planning()
		resolverSink = r.Query()
		resolverSink = r.Recommendation()
	})
	if n != 0 {
		t.Errorf("%v allocations to hand out four object resolvers", n)
	}
}

// resolverSink keeps what the test hands out, as the executor does.
var resolverSink any
