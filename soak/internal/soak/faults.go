package soak

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// injector carries out the faults of a schedule.
type injector struct {
	fleet *fleet
	api   *tcpProxy
	git   *gitFaults
	// gitea is Gitea's fault proxy; nil when the run has no Gitea.
	gitea  *gitFaults
	events *eventLog
	// apiserver is the kube-apiserver the soak restarted last, which it must stop at the end.
	apiserver *exec.Cmd
}

func (in *injector) inject(ctx context.Context, f Fault) error {
	in.events.add("FAULT " + f.String())
	switch f.Kind {
	case KillReplica:
		r := in.fleet.replicas[f.Target%len(in.fleet.replicas)]
		return in.fleet.kill(ctx, r, f.Length)
	case DropAPIConnections:
		in.api.dropAll()
	case StallAPI:
		in.api.stall(f.Length)
	case RestartAPIServer:
		return in.restartAPIServer(ctx)
	case PauseEtcd:
		return in.pauseEtcd(ctx, f.Length)
	case RefuseGitPushes:
		in.git.refuseFor(f.Length)
	case SlowGit:
		in.git.slowFor(f.Length)
	case GiteaErrors, SlowGitea:
		if in.gitea == nil {
			return fmt.Errorf("the run has no Gitea")
		}
		if f.Kind == GiteaErrors {
			in.gitea.failFor(f.Length)
		} else {
			in.gitea.slowFor(f.Length)
		}
	}
	return sleep(ctx, f.Length)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// child finds the soak's child process named comm (kube-apiserver, etcd) in /proc.
func child(comm string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		open, close := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
		if open < 0 || close < 0 {
			continue
		}
		fields := strings.Fields(string(stat)[close+1:])
		if string(stat)[open+1:close] != comm || len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == self {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no running %s started by the soak", comm)
}

// restartAPIServer stops kube-apiserver and starts it again with the same command line,
// folder, certificates and port: etcd, and so every object, is kept.
func (in *injector) restartAPIServer(ctx context.Context) error {
	pid, err := child("kube-apiserver")
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return err
	}
	dir, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return err
	}
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 300 && alive(pid); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// The port is free once the old process is gone; a moment more for its socket to close.
	if err := sleep(ctx, 500*time.Millisecond); err != nil {
		return err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start kube-apiserver again: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	in.apiserver = cmd
	return nil
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	close := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat)[close+1:])
	return len(fields) > 0 && fields[0] != "Z"
}

// pauseEtcd stops etcd with SIGSTOP for d, then lets it go on.
func (in *injector) pauseEtcd(ctx context.Context, d time.Duration) error {
	pid, err := child("etcd")
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	defer func() { _ = syscall.Kill(pid, syscall.SIGCONT) }()
	return sleep(ctx, d)
}

// stop ends the kube-apiserver the soak started, if any.
func (in *injector) stop() {
	if in.apiserver != nil && in.apiserver.Process != nil {
		_ = in.apiserver.Process.Signal(syscall.SIGTERM)
	}
}
