// Command sluice-demo runs the Sluice story on the embedded local control plane. Ctrl-C stops
// it cleanly at any point.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/sluicehq/sluice/dev/demo"
)

func main() {
	keep := flag.Bool("keep-running", false, "Leave the control plane, the controllers and the web UI running after the story, and print the UI's URL, until Ctrl-C (make demo UI=1).")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bin, err := demo.BinDirFromRepo()
	if err == nil {
		err = demo.Run(ctx, demo.Options{BinDir: bin, Out: os.Stdout, KeepRunning: *keep,
			ScreenshotDir: filepath.Join(filepath.Dir(bin), ".cache", "demo")})
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
