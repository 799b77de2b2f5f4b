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
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "costsim:", err)
		os.Exit(1)
	}
}
