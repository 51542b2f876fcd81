package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Node is a running single-node cluster. Down stops it and puts the machine back.
type Node struct {
	Config
	// BringUp is how long Up took, from nothing to a Ready node with its default ServiceAccount.
	BringUp time.Duration
	lock    *os.File
}

// Up brings a node up: addresses and egress rules first, then etcd, the API server, kube-proxy
// (the kubernetes Service must have a local path before any pod starts), the controller manager,
// the scheduler, CoreDNS, containerd with the images, and the kubelet; it returns once the node is Ready
// and the default ServiceAccount exists. On failure it tears down what it started.
func Up(ctx context.Context, c Config) (*Node, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("node: a real node needs root (network, mounts, cgroups): run make e2e as root")
	}
	lock, err := c.acquireLock(false)
	if err != nil {
		return nil, err
	}
	n := &Node{Config: c, lock: lock}
	start := time.Now()
	if err := n.up(ctx); err != nil {
		return nil, errors.Join(err, n.Down())
	}
	n.BringUp = time.Since(start)
	return n, nil
}

func (n *Node) up(ctx context.Context) error {
	if _, ok, err := n.readState(); err != nil || ok {
		return fmt.Errorf("node: %s exists: a previous node was not torn down; run `go run ./e2e/cmd/sluice-node down` (%v)", n.stateFile(), err)
	}
	s, err := recordState()
	if err != nil {
		return err
	}
	if err := n.writeState(s); err != nil {
		return err
	}
	for _, dir := range []string{n.Run, n.HostBin()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := n.setUpNetwork(); err != nil {
		return err
	}
	if err := n.writePKI(); err != nil {
		return err
	}
	if err := n.writeKubeconfigs(); err != nil {
		return err
	}
	return n.startComponents(ctx)
}

func (n *Node) startComponents(ctx context.Context) error {
	if _, err := n.startEtcd(ctx); err != nil {
		return err
	}
	apiserver, err := n.startAPIServer()
	if err != nil {
		return err
	}
	cfg, err := n.AdminConfig()
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := n.waitFor(ctx, apiserver, 2*time.Minute, func(ctx context.Context) error {
		_, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}); err != nil {
		return err
	}
	if _, err := n.startKubeProxy(ctx); err != nil {
		return err
	}
	if _, err := n.startControllerManager(); err != nil {
		return err
	}
	if _, err := n.startScheduler(); err != nil {
		return err
	}
	if _, err := n.startCoreDNS(ctx, kube); err != nil {
		return err
	}
	if _, err := n.startContainerd(ctx); err != nil {
		return err
	}
	if err := n.importImages(); err != nil {
		return err
	}
	kubelet, err := n.startKubelet()
	if err != nil {
		return err
	}
	return n.waitFor(ctx, kubelet, 3*time.Minute, func(ctx context.Context) error { return ready(ctx, kube) })
}

// ready checks that the node is Ready and that the controller manager has made the default
// ServiceAccount and the root CA ConfigMap, without which no pod starts.
func ready(ctx context.Context, kube kubernetes.Interface) error {
	node, err := kube.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	readyCond := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			readyCond = true
		}
	}
	if !readyCond {
		return errNotYet("the node is not Ready")
	}
	if _, err := kube.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return err
	}
	_, err = kube.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return errNotYet("no kube-root-ca.crt in default yet")
	}
	return err
}

// acquireLock takes the machine's node lock: one node per machine. wait blocks until it is free.
func (p Paths) acquireLock(wait bool) (*os.File, error) {
	f, err := os.OpenFile(p.lockFile(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("node: another node runs on this machine (%s is locked): %w", p.lockFile(), err)
	}
	return f, nil
}

// Lock waits for the machine's node lock, for a teardown from another process.
func (p Paths) Lock() (*os.File, error) { return p.acquireLock(true) }
