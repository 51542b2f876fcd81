// Command kubectl-gate is the kubectl plugin for Sluice Gates: put it on $PATH and run
// `kubectl gate`. Its exit codes are documented in `kubectl gate --help`.
package main

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/sluicehq/sluice/gate-controller/internal/plugin"
)

func main() {
	cmd := plugin.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	err := cmd.Execute()
	var exitErr *plugin.ExitError
	if err != nil && !(errors.As(err, &exitErr) && exitErr.Printed) {
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	os.Exit(plugin.ExitCode(err))
}
