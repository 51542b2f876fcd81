package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// unmountAll unmounts every mount under the node's folders, the folders it created, and the
// network namespaces it created, deepest first, then removes those namespaces.
func (p Paths) unmountAll(s state) error {
	prefixes := append([]string{p.Work, p.Run}, s.Created...)
	before := map[string]bool{}
	for _, name := range s.Netns {
		before[name] = true
	}
	entries, _ := os.ReadDir(netnsDir)
	var netns []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "cni-") && !before[e.Name()] {
			netns = append(netns, filepath.Join(netnsDir, e.Name()))
		}
	}
	prefixes = append(prefixes, netns...)
	var errs []error
	// Mounts can be stacked: unmount until none is left, or a round removes nothing.
	for round := 0; round < 5; round++ {
		targets, err := mountsUnder(prefixes)
		if err != nil || len(targets) == 0 {
			errs = append(errs, err)
			break
		}
		for _, t := range targets {
			if err := syscall.Unmount(t, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", t, err))
			}
		}
	}
	for _, ns := range netns {
		errs = append(errs, os.Remove(ns))
	}
	return errors.Join(errs...)
}

// mountsUnder lists the mount points at or under any prefix, deepest first.
func mountsUnder(prefixes []string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var targets []string
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		target := unescapeMount(fields[4])
		for _, prefix := range prefixes {
			if target == prefix || strings.HasPrefix(target, prefix+"/") {
				targets = append(targets, target)
				break
			}
		}
	}
	sort.Slice(targets, func(i, j int) bool { return strings.Count(targets[i], "/") > strings.Count(targets[j], "/") })
	return targets, nil
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

const cgroupRoot = "/sys/fs/cgroup"

// kubepodsDirs lists the kubelet's cgroups (kubepods and below) in every hierarchy, deepest first.
func kubepodsDirs() []string {
	var dirs []string
	tops, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", "kubepods"))
	if _, err := os.Stat(filepath.Join(cgroupRoot, "kubepods")); err == nil {
		tops = append(tops, filepath.Join(cgroupRoot, "kubepods"))
	}
	for _, top := range tops {
		_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	return dirs
}

// killPods kills every process in the kubelet's cgroups: the pods' containers, which outlive
// the kubelet and containerd.
func killPods() error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids := podPids()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pods' processes still running after SIGKILL: %v", pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func podPids() []int {
	seen := map[int]bool{}
	var pids []int
	for _, dir := range kubepodsDirs() {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !seen[pid] && running(pid) {
				seen[pid] = true
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// removeCgroups removes the kubelet's cgroups once their processes are gone.
func removeCgroups() error {
	var errs []error
	for _, dir := range kubepodsDirs() {
		if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}
