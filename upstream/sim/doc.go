// Package sim is a faithful, deterministic, in-process simulator of the Cost
// Management REST API that docs/upstream.md describes.
//
// A [Server] is an [http.Handler]: serve it with httptest.NewServer in tests or
// mount it in-process. Everything it answers is derived from a seed and a data
// date (Options.AsOf), so two servers built with the same options hold the same
// data; only write timestamps and request ids come from the clock and from
// randomness. The choices the simulator makes where the contract is silent are
// written down in docs/simulator.md; this package implements exactly those.
//
// The simulator knows nothing of the client in package upstream: it has its own
// record types whose JSON tags are the contract's field names, so a drift in
// either shows up as a failing contract test rather than being hidden by a
// shared type.
//
// Beyond the API itself the Server offers instruments for tests: request counts
// per operation id ([Server.Calls]), injected latency ([Server.SetLatency]) and
// injected faults ([Server.SetFaults]), and the ids of each collection in list
// order ([Server.IDs]).
package sim
