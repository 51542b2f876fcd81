// Command sluice-demo runs the Sluice story on the embedded local control plane. Ctrl-C stops
// it cleanly at any point.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/dev/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bin, err := demo.BinDirFromRepo()
	if err == nil {
		err = demo.Run(ctx, demo.Options{BinDir: bin, Out: os.Stdout})
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "demo interrupted; everything it started has been stopped")
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}
