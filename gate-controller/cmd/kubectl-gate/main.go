// Command kubectl-gate is the deprecated alias of `kubectl sluice gate`, kept for one release:
// it says so on stderr and runs the same commands. Its exit codes are documented in
// `kubectl sluice gate --help`.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/sluicehq/sluice/gate-controller/gatecli"
)

// deprecation goes to stderr, so scripts that read the output keep working.
const deprecation = "kubectl gate is deprecated and will be removed in the next release: run `kubectl sluice gate` instead, with the same arguments\n"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run says that the alias is deprecated, runs the gate commands with args, and returns the
// exit code.
func run(args []string, in io.Reader, out, errOut io.Writer) int {
	fmt.Fprint(errOut, deprecation)
	cmd := gatecli.NewAliasCommand(genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut})
	cmd.SetArgs(args)
	err := cmd.Execute()
	var exitErr *gatecli.ExitError
	if err != nil && !(errors.As(err, &exitErr) && exitErr.Printed) {
		fmt.Fprintln(errOut, "error:", err)
	}
	return gatecli.ExitCode(err)
}
