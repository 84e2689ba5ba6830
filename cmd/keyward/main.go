// Command keyward is the self-hosted license, session, trial and update server.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/keyward/keyward/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
