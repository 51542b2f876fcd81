package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// startReaper starts a small shell process that outlives this test binary and stops the control
// plane's processes once the binary is gone. go test ends a binary that runs past -timeout with
// a panic, which runs no cleanup; without the reaper its kube-apiserver and etcd would keep
// running, and a CI machine would fill with them. SIGKILL, because a kube-apiserver asked to stop
// after its etcd is gone waits for it without end. Best effort: where /proc or sh is missing there
// is no reaper.
func startReaper() (stop func()) {
	children := childProcesses(os.Getpid(), "kube-apiserver", "etcd")
	if len(children) == 0 {
		return func() {}
	}
	script := fmt.Sprintf("while kill -0 %d 2>/dev/null; do sleep 1; done; kill -9 %s 2>/dev/null", os.Getpid(), strings.Join(children, " "))
	cmd := exec.Command("sh", "-c", script)
	// Its own process group, so a Ctrl-C to the test's group does not end the reaper first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return func() {}
	}
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// childProcesses are the ids of parent's child processes with one of the given names.
func childProcesses(parent int, names ...string) []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so split after its closing paren.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) || !slices.Contains(names, s[open+1:end]) {
			continue
		}
		out = append(out, strings.Fields(s[:open])[0])
	}
	return out
}
