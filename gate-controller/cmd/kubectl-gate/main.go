// Command kubectl-gate is the kubectl plugin for Sluice Gates: put it on $PATH and run
// `kubectl gate`.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/sluicehq/sluice/gate-controller/internal/plugin"
)

func main() {
	cmd := plugin.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
