// Command costsim serves the Cost Management API simulator (package
// upstream/sim) over HTTP, so the gateway, the client and people can talk to
// a deterministic stand-in for the real API.
//
//	go run ./cmd/costsim -listen 127.0.0.1:8090
//
// Every flag can also be set through an environment variable named
// COSTSIM_ plus the flag name in upper case with dashes as underscores
// (COSTSIM_LISTEN, COSTSIM_FAULT_500, ...); a flag on the command line wins.
package main

import (
	"context"
	"os"

	cfgpkg "github.com/costgw/gateway/internal/config"
)

func main() {
	cfgpkg.Main("costsim", func(ctx context.Context, args []string) error { return run(ctx, args, os.Stdout) })
}
