// Command kubectl-gate is the deprecated alias of `kubectl sluice gate`, kept for one release:
// it says so on stderr and runs the same commands. Its exit codes are documented in
// `kubectl sluice gate --help`.
package main

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/sluicehq/sluice/gate-controller/gatecli"
)

// deprecation goes to stderr, so scripts that read the output keep working.
const deprecation = "kubectl gate is deprecated and will be removed in the next release: run `kubectl sluice gate` instead, with the same arguments\n"

func main() {
	fmt.Fprint(os.Stderr, deprecation)
	cmd := gatecli.NewAliasCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	err := cmd.Execute()
	var exitErr *gatecli.ExitError
	if err != nil && !(errors.As(err, &exitErr) && exitErr.Printed) {
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	os.Exit(gatecli.ExitCode(err))
}
