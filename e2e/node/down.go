package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Down stops the node and removes everything it made. It holds the node's lock.
func (n *Node) Down() error {
	err := n.Paths.Down()
	if n.lock != nil {
		_ = n.lock.Close()
		n.lock = nil
	}
	return err
}

// Down tears down whatever a node left on this machine, from a run that ended normally,
// failed, or was killed: the components (by their pid files), the pods' processes (by their
// cgroups) and containerd's shims (by their socket), mounts, network namespaces, cgroups,
// iptables chains, links and kernel settings, and the folders. Every step runs even when an
// earlier one fails; it is safe to run when there is nothing to remove. The caller holds the
// node's lock (Node.Down does; sluice-node down takes it with Paths.Lock).
func (p Paths) Down() error {
	s, _, err := p.readState()
	errs := []error{err}
	for _, name := range []string{"kubelet", "kube-proxy", "kube-scheduler", "kube-controller-manager"} {
		errs = append(errs, p.stopByPidFile(name, 10*time.Second))
	}
	errs = append(errs, killPods(), p.killShims(), p.stopByPidFile("containerd", 10*time.Second))
	for _, name := range []string{"coredns", "kube-apiserver", "etcd"} {
		errs = append(errs, p.stopByPidFile(name, 10*time.Second))
	}
	errs = append(errs, p.unmountAll(s), removeCgroups(), removeChains())
	for _, link := range []string{PodBridge, NodeLink} {
		if _, err := os.Stat(filepath.Join("/sys/class/net", link)); err == nil {
			_, err := run("ip", "link", "del", link)
			errs = append(errs, err)
		}
	}
	for key, value := range s.Sysctls {
		errs = append(errs, writeSysctl(key, value))
	}
	errs = append(errs, removeCNICache())
	for _, path := range append([]string{p.Run, p.Work}, s.Created...) {
		errs = append(errs, os.RemoveAll(path))
	}
	return errors.Join(errs...)
}

// killShims stops containerd's shims for this node's containerd: they outlive containerd, and
// name its socket on their command line.
func (p Paths) killShims() error {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range procs {
		pid := 0
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid <= 1 {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.Contains(args[0], "containerd-shim") && containsArg(args, p.ContainerdSocket()) {
			errs = append(errs, stopPid(pid, 5*time.Second))
		}
	}
	return errors.Join(errs...)
}

func containsArg(args []string, want string) bool {
	for _, a := range args {
		if a == want {
			return true
		}
	}
	return false
}

// removeCNICache removes libcni's cached results of this node's network (it keeps them under
// /var/lib/cni whatever the configuration says).
func removeCNICache() error {
	matches, _ := filepath.Glob(filepath.Join("/var/lib/cni/results", CNINetwork+"-*"))
	var errs []error
	for _, m := range matches {
		errs = append(errs, os.RemoveAll(m))
	}
	return errors.Join(errs...)
}
