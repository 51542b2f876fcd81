package gatecli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// Exit codes of kubectl-gate, so a CronJob or a script can tell them apart.
const (
	// ExitOK: every change was applied and, where the command waits, confirmed.
	ExitOK = 0
	// ExitFailed: a change was not applied (not found, forbidden, invalid, the API server
	// unreachable); with several objects, at least one was not.
	ExitFailed = 1
	// ExitUsage: the command line is wrong; nothing was changed.
	ExitUsage = 2
	// ExitUnconfirmed: every change was applied, but it is not confirmed in effect within --wait:
	// the gate-controller (or the object's own controller) is slow or down, or the gate is
	// suspended and keeps its state. Running the same command again is safe.
	ExitUnconfirmed = 3
)

const exitCodesHelp = `Exit codes:
  0  applied and, where the command waits, confirmed
  1  not applied (not found, forbidden, invalid, API server unreachable), for at least one object
  2  wrong command line; nothing changed
  3  applied but not yet confirmed within --wait (the controller is slow or down, or the gate
     is suspended); running the command again is safe`

// ExitError carries an exit code. Printed is true when the command already said everything on
// its output, so the caller prints nothing more.
type ExitError struct {
	Code    int
	Err     error
	Printed bool
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the process exit code for the error a command returned.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitFailed
}

func usageError(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// usageArgs turns cobra's argument errors into usage errors.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &ExitError{Code: ExitUsage, Err: err}
		}
		return nil
	}
}

// tally counts the outcomes of a command over several objects.
type tally struct{ failed, unconfirmed, total int }

func (t tally) err() error {
	switch {
	case t.failed > 0:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%d of %d not applied", t.failed, t.total), Printed: true}
	case t.unconfirmed > 0:
		return &ExitError{Code: ExitUnconfirmed, Err: fmt.Errorf("%d of %d applied but not yet confirmed", t.unconfirmed, t.total), Printed: true}
	}
	return nil
}
