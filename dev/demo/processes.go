package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// controllerNames lists the controllers in the order the story needs them.
var controllerNames = []string{"gate-controller", "health-controller", "commitstatus-controller", "promoter-controller", "rollback-controller"}

type processes []*exec.Cmd

// startControllers starts every controller binary that exists in binDir. Missing ones are
// reported and skipped, so the demo grows as controllers land.
func startControllers(ctx context.Context, binDir, kubeconfig, logDir string, s *Story) (processes, error) {
	var procs processes
	for _, name := range controllerNames {
		bin := filepath.Join(binDir, name)
		if _, err := os.Stat(bin); err != nil {
			s.Say("%-24s not built (run `make build`); skipped", name)
			continue
		}
		metrics, err := freeAddr()
		if err != nil {
			return procs, err
		}
		probes, err := freeAddr()
		if err != nil {
			return procs, err
		}
		logFile, err := os.Create(filepath.Join(logDir, name+".log"))
		if err != nil {
			return procs, err
		}
		args := []string{
			"--kubeconfig", kubeconfig,
			"--metrics-bind-address", metrics,
			"--health-probe-bind-address", probes,
			"--log-format", "text",
		}
		if name == "commitstatus-controller" {
			// The status webhook receiver, so an SCM's status delivery wakes the import (the
			// CI chapter has Gitea deliver to it).
			if s.StatusWebhook, err = freeAddr(); err != nil {
				return procs, err
			}
			args = append(args, "--webhook-bind-address", s.StatusWebhook)
		}
		// Not CommandContext: shutdown must be a SIGTERM and a wait, in stop, not a kill.
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			_ = logFile.Close()
			return procs, fmt.Errorf("start %s: %w", name, err)
		}
		procs = append(procs, cmd)
		s.Metrics[name] = metrics
		s.Say("%-24s pid %-7d metrics http://%s/metrics", name, cmd.Process.Pid, metrics)
	}
	return procs, nil
}

// stop sends SIGTERM to every controller and waits for a graceful exit, killing any that take
// longer than ten seconds.
func (p processes) stop() error {
	var errs []error
	for _, cmd := range p {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, cmd := range p {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(cmd.Path), err))
			}
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			errs = append(errs, fmt.Errorf("%s did not stop within 10s after SIGTERM; killed", filepath.Base(cmd.Path)))
		}
	}
	return errors.Join(errs...)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
