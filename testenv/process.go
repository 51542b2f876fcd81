package testenv

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// RequireKilled fails t unless err, from waiting for a controller process, says it died of
// SIGKILL: a process that exited on its own (a start-up that gave up, say) is a finding of a
// crash test, not one of its kills.
func RequireKilled(t testing.TB, err error, run int) {
	t.Helper()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("run %d: not killed: %v", run, err)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("run %d exited before its kill -9: %v", run, exit)
	}
}

// Tail is the last lines of a process's output, for a failed test's log.
func Tail(out []byte, lines int) string {
	all := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(all) > lines {
		all = append([]string{fmt.Sprintf("... %d earlier lines", len(all)-lines)}, all[len(all)-lines:]...)
	}
	return strings.Join(all, "\n")
}
