// Command costgw is a GraphQL gateway in front of the Cost Management REST
// API. Without -upstream it runs on the built-in simulator of that API, so it
// works with no account and no network. `costgw -h` lists its settings;
// package internal/server is the command.
package main

import (
	"context"
	"os"

	"github.com/costgw/gateway/internal/config"
	"github.com/costgw/gateway/internal/server"
)

func main() {
	config.Main("costgw", func(ctx context.Context, args []string) error {
		return server.Run(ctx, args, os.LookupEnv, os.Stdout, os.Stderr, nil)
	})
}
