// Command costgw is a GraphQL gateway in front of the Cost Management REST
// API. Without -upstream it runs on the built-in simulator of that API, so it
// works with no account and no network. `costgw -h` lists its settings;
// package internal/server is the command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/costgw/gateway/internal/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := server.Run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr, nil)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "costgw:", err)
		os.Exit(1)
	}
}
