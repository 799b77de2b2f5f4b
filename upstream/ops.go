package upstream

// The contract's operations are named by package ops; the client's own
// call, Ping, has a name of its own.
const (
	// OpPing is Client.Ping's keyless GET /v1/budgets; not an operation of
	// the contract.
	OpPing = "ping"
)
