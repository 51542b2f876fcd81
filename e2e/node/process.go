package node

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is a component the node started: its pid is in a file under Paths.Run, so Down in
// another process stops exactly it, and its output goes to <LogDir>/<name>.log.
type process struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

func (c Config) start(name, bin string, args ...string) (*process, error) {
	if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(c.pidFile(name)), 0o700); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(c.logFile(name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: a Ctrl-C of the tests reaches the tests, whose teardown stops the
	// components in order, instead of killing the kubelet under its pods.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	if err := os.WriteFile(c.pidFile(name), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

func (c Config) logFile(name string) string { return filepath.Join(c.LogDir, name+".log") }

// alive reports an error naming the process and the end of its log when it has exited.
func (c Config) alive(p *process) error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v); the end of %s:\n%s", p.name, p.err, c.logFile(p.name), c.LogTail(p.name, 30))
	default:
		return nil
	}
}

// LogTail returns the last lines of a component's log.
func (c Config) LogTail(name string, lines int) string {
	b, _ := os.ReadFile(c.logFile(name))
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// stopByPidFile stops the component whose pid is in its pid file, if that pid still runs the
// component's binary: SIGTERM, then SIGKILL after grace.
func (p Paths) stopByPidFile(name string, grace time.Duration) error {
	b, err := os.ReadFile(p.pidFile(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("pid file of %s: %w", name, err)
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && !strings.Contains(filepath.Base(exe), name) {
		// The pid was recycled: it is not ours any more.
		return os.Remove(p.pidFile(name))
	}
	if err := stopPid(pid, grace); err != nil {
		return fmt.Errorf("stop %s (pid %d): %w", name, pid, err)
	}
	return os.Remove(p.pidFile(name))
}

// stopPid sends SIGTERM, waits up to grace for the process to go, then SIGKILLs it.
func stopPid(pid int, grace time.Duration) error {
	if !running(pid) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !running(pid) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 100 && running(pid); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if running(pid) {
		return errors.New("still running after SIGKILL")
	}
	return nil
}

// running is false for a pid that is gone or a zombie (dead, waiting for its parent to reap it).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
