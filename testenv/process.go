package testenv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

var (
	commandsMu sync.Mutex
	// commandsDir holds the binaries BuildCommand built, removed once the package's tests ran.
	commandsDir string
	commands    = map[string]*builtCommand{}
)

// builtCommand is one BuildCommand result, built once per test process.
type builtCommand struct {
	once sync.Once
	bin  string
	err  error
}

// BuildCommand builds the command at path, from the repository root (as
// "rollback-controller/cmd/rollback-controller"), once per test process, and returns the binary.
// The binaries go to a folder of their own, removed once the package's tests ran (see OnStop).
func BuildCommand(t testing.TB, path string) string {
	t.Helper()
	commandsMu.Lock()
	c, ok := commands[path]
	if !ok {
		c = &builtCommand{}
		commands[path] = c
	}
	commandsMu.Unlock()
	c.once.Do(func() { c.bin, c.err = buildCommand(path) })
	if c.err != nil {
		t.Fatal(c.err)
	}
	return c.bin
}

func buildCommand(path string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	commandsMu.Lock()
	if commandsDir == "" {
		if commandsDir, err = os.MkdirTemp("", "sluice-commands-"); err != nil {
			commandsMu.Unlock()
			return "", err
		}
		dir := commandsDir
		OnStop(func() { _ = os.RemoveAll(dir) })
	}
	dir := commandsDir
	commandsMu.Unlock()
	bin := filepath.Join(dir, filepath.Base(path))
	build := exec.Command("go", "build", "-o", bin, "./"+path)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", path, err, out)
	}
	return bin, nil
}

// StartController runs the controller binary bin against e's control plane, watching only
// namespace: no leader election, metrics and health probes on loopback ports the system picks,
// its output to out, then flags. A process still running when the test ends is interrupted and
// waited for.
func (e *Env) StartController(t testing.TB, bin, namespace string, out io.Writer, flags ...string) *exec.Cmd {
	t.Helper()
	args := append([]string{"--kubeconfig", e.Kubeconfig, "--leader-elect=false", "--namespace", namespace,
		"--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0"}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		// Both fail harmlessly on a process the test already waited for.
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	return cmd
}

// LogFile is one file for the output of every run of a process, its last lines shown in the
// test's log when the test fails.
func LogFile(t testing.TB, name string) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.Close()
		if t.Failed() {
			if out, err := os.ReadFile(f.Name()); err == nil {
				t.Logf("%s log:\n%s", name, Tail(out, 200))
			}
		}
	})
	return f
}

// Kill9 kills the process of cmd with SIGKILL, and fails t unless it died of it: run numbers the
// kill in the test's messages.
func Kill9(t testing.TB, cmd *exec.Cmd, run int) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("run %d: kill -9: %v", run, err)
	}
	RequireKilled(t, cmd.Wait(), run)
}

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
