package node

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// state is what Up found before it changed anything, written before the first change so that
// Down, in any process, puts the machine back as it was.
type state struct {
	// Sysctls are the values of the kernel settings the node may change (kubelet's kernel
	// tunables, forwarding, kube-proxy's conntrack and route_localnet), by /proc/sys path.
	Sysctls map[string]string `json:"sysctls"`
	// Created are folders outside Paths that did not exist: the node's components create them
	// at fixed places, and Down removes them.
	Created []string `json:"created"`
	// Netns are the network namespaces in /run/netns before the node: Down removes only others.
	Netns []string `json:"netns"`
}

// touchedSysctls are restored by Down; kubelet sets the first five unless protectKernelDefaults.
var touchedSysctls = []string{
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
	"net/ipv4/ip_forward",
	"net/ipv4/conf/all/route_localnet",
	"net/bridge/bridge-nf-call-iptables",
	"net/bridge/bridge-nf-call-ip6tables",
	"net/netfilter/nf_conntrack_max",
	"net/netfilter/nf_conntrack_tcp_timeout_established",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait",
}

// fixedPaths are where kubelet, containerd and the CNI plugins write whatever their flags say:
// device plugin sockets, pod logs, libcni's cache, shim sockets, network namespaces.
var fixedPaths = []string{
	"/var/lib/kubelet",
	"/var/log/pods",
	"/var/log/containers",
	"/var/lib/cni",
	"/run/netns",
	"/run/containerd",
	"/var/lib/containerd",
	"/opt/containerd",
	"/etc/cni",
	"/run/kubernetes",
	"/etc/kubernetes",
}

const netnsDir = "/run/netns"

func recordState() (state, error) {
	s := state{Sysctls: map[string]string{}}
	for _, key := range touchedSysctls {
		if b, err := os.ReadFile(filepath.Join("/proc/sys", key)); err == nil {
			s.Sysctls[key] = strings.TrimSpace(string(b))
		}
	}
	for _, p := range fixedPaths {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			s.Created = append(s.Created, p)
		}
	}
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		s.Netns = append(s.Netns, e.Name())
	}
	return s, nil
}

func (p Paths) writeState(s state) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.stateFile()), 0o700); err != nil {
		return err
	}
	return os.WriteFile(p.stateFile(), b, 0o600)
}

// readState returns the recorded state, or ok false when no node was ever brought up here.
func (p Paths) readState() (s state, ok bool, err error) {
	b, err := os.ReadFile(p.stateFile())
	if errors.Is(err, os.ErrNotExist) {
		return state{}, false, nil
	}
	if err != nil {
		return state{}, false, err
	}
	return s, true, json.Unmarshal(b, &s)
}

func writeSysctl(key, value string) error {
	return os.WriteFile(filepath.Join("/proc/sys", key), []byte(value+"\n"), 0o644)
}
