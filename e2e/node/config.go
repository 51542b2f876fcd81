// Package node brings up a real single-node Kubernetes cluster on this machine, as root, from
// binaries built from Go modules (hack/testbin.sh --node) and Debian's containerd, runc and CNI
// plugins; and tears it down again, from whatever state a run left behind. Nothing is pulled:
// images are imported into containerd, and no packet from a pod leaves the machine.
//
// Everything the node creates is named here, so Down can remove it even after a crash, from a
// fresh process: see docs/e2e.md for the list.
package node

import (
	"fmt"
	"net/netip"
	"path/filepath"
)

// Names and addresses of the node. They are fixed, so a teardown in another process finds
// everything a crashed run left; there can be one node per machine (Up takes a lock).
const (
	// NodeName is the Node object's name and the kubelet's hostname override.
	NodeName = "sluice-e2e"
	// NodeLink is a bridge with no ports that holds NodeIP and OutsideIP: this kernel may lack
	// the dummy link type, and a bridge works the same for local addresses.
	NodeLink = "sluice-node0"
	// PodBridge is the CNI bridge the pods' veths attach to.
	PodBridge = "sluice-cni0"
	// CNINetwork names the CNI network (and prefixes libcni's cache entries).
	CNINetwork = "sluice-e2e"
	// EgressChain is the iptables chain that drops pod traffic bound anywhere but the pod
	// network, the service range and the node.
	EgressChain = "SLUICE-E2E-EGRESS"
	// APIServerPort is where kube-apiserver listens on NodeIP.
	APIServerPort = 6443
	etcdPort      = 2379
	etcdPeerPort  = 2380
)

var (
	// NodeIP is the node's address, a TEST-NET-2 address on NodeLink. kube-proxy's and kubelet's
	// rules drop traffic to 127.0.0.0/8 from non-loopback sources, so pods reach the node here.
	NodeIP = netip.MustParseAddr("198.51.100.2")
	// OutsideIP is a TEST-NET-3 address the host owns (on NodeLink) but pods may not reach: the
	// egress test listens on it, so without the drop rules a pod would connect.
	OutsideIP = netip.MustParseAddr("203.0.113.7")
	// PodCIDR is the one node's pod range; ClusterCIDR holds it.
	PodCIDR     = netip.MustParsePrefix("10.244.0.0/24")
	ClusterCIDR = netip.MustParsePrefix("10.244.0.0/16")
	// ServiceCIDR is the service range; its first address is the kubernetes Service.
	ServiceCIDR = netip.MustParsePrefix("10.96.0.0/16")
	// KubernetesServiceIP is the kubernetes Service's ClusterIP.
	KubernetesServiceIP = netip.MustParseAddr("10.96.0.1")
)

// Paths holds every folder the node writes to. The defaults are fixed so Down finds them.
type Paths struct {
	// Work holds certificates, configurations, etcd, containerd's content, the kubelet's root
	// folder and the state file.
	Work string
	// Run holds containerd's state and socket, and the pid files.
	Run string
}

// DefaultPaths are the folders of the one node of this machine.
var DefaultPaths = Paths{Work: "/var/lib/sluice-e2e", Run: "/run/sluice-e2e"}

func (p Paths) pki(name string) string       { return filepath.Join(p.Work, "pki", name) }
func (p Paths) kubeconfig(who string) string { return filepath.Join(p.Work, "kubeconfig", who) }
func (p Paths) pidFile(name string) string   { return filepath.Join(p.Run, "pids", name+".pid") }
func (p Paths) stateFile() string            { return filepath.Join(p.Work, "state.json") }
func (p Paths) lockFile() string             { return p.Run + ".lock" }
func (p Paths) containerdRoot() string       { return filepath.Join(p.Work, "containerd") }
func (p Paths) containerdState() string      { return filepath.Join(p.Run, "containerd") }
func (p Paths) cniConfDir() string           { return filepath.Join(p.Work, "cni", "net.d") }
func (p Paths) cniIPAMDir() string           { return filepath.Join(p.Work, "cni", "networks") }
func (p Paths) kubeletRoot() string          { return filepath.Join(p.Work, "kubelet") }
func (p Paths) etcdData() string             { return filepath.Join(p.Work, "etcd") }

// ContainerdSocket is the address ctr and the kubelet use.
func (p Paths) ContainerdSocket() string { return filepath.Join(p.Run, "containerd.sock") }

// AdminKubeconfig is a cluster-admin kubeconfig for kubectl, helm and the tests.
func (p Paths) AdminKubeconfig() string { return p.kubeconfig("admin") }

// HostBin is a folder of helper binaries that test pods mount read-only (hostPath).
func (p Paths) HostBin() string { return filepath.Join(p.Work, "hostbin") }

// Config is one bring-up.
type Config struct {
	Paths
	// BinDir holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy,
	// kubelet, coredns and kubectl (hack/testbin.sh --node).
	BinDir string
	// LogDir receives each component's log; it is kept after Down.
	LogDir string
	// Images are OCI archives (bin/images/<name>.oci.tar) imported into containerd.
	Images []string
	// SandboxImage is containerd's pause image, one of Images.
	SandboxImage string
}

func (c Config) validate() error {
	switch {
	case c.BinDir == "":
		return fmt.Errorf("node: BinDir is empty: run hack/testbin.sh --node")
	case c.LogDir == "":
		return fmt.Errorf("node: LogDir is empty")
	case c.SandboxImage == "":
		return fmt.Errorf("node: SandboxImage is empty: build the pause image with make images")
	}
	return nil
}

func (c Config) bin(name string) string { return filepath.Join(c.BinDir, name) }
