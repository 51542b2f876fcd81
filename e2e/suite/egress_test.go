package suite

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/e2e/node"
	"github.com/sluicehq/sluice/testenv"
)

// A pod reaches the node, but no address outside the pod network, the service range and the
// node: not an address this machine owns and listens on (which it would reach without the
// drop rules), and not one beyond the default route, whose packets the egress rule counts.
func TestPodsCannotLeaveTheMachine(t *testing.T) {
	ns := cluster.namespace(t, "e2e-egress")
	atNode := listen(t, node.NodeIP)
	outside := listen(t, node.OutsideIP)
	conn, err := net.DialTimeout("tcp", outside.addr, 5*time.Second)
	require.NoError(t, err, "the host reaches its own outside address: the listener works")
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool { return outside.count() == 1 }, 10*time.Second, 10*time.Millisecond)

	ok, out := cluster.dial(t, ns, "to-node", atNode.addr)
	assert.True(t, ok, "a pod reaches the node's address:\n%s", out)
	assert.Equal(t, 1, atNode.count(), "the node's listener accepted the pod's connection")
	for _, peer := range atNode.peers() {
		assert.True(t, node.PodCIDR.Contains(peer), "the connection came from a pod address, not %s", peer)
	}

	for name, addr := range map[string]string{"to-outside": outside.addr, "to-internet": "1.1.1.1:443"} {
		before, err := node.Drops(node.PodEgress)
		require.NoError(t, err)
		ok, out := cluster.dial(t, ns, name, addr)
		assert.False(t, ok, "a pod must not reach %s:\n%s", addr, out)
		after, err := node.Drops(node.PodEgress)
		require.NoError(t, err)
		assert.Greater(t, after, before, "the egress rule dropped the pod's packets to %s", addr)
	}
	assert.Equal(t, 1, outside.count(), "only the host reached the outside address, no pod did")
}

// The host's own connection to a service address that kube-proxy has not programmed (a Service
// just created, or none) stays on the machine too, instead of following the default route: on a
// machine whose egress is intercepted, it would otherwise reach whatever answers outside.
func TestHostTrafficToTheServiceRangeStaysOnTheMachine(t *testing.T) {
	before, err := node.Drops(node.ClusterLeak)
	require.NoError(t, err)
	conn, err := net.DialTimeout("tcp", "10.96.255.254:443", 3*time.Second)
	if err == nil {
		_ = conn.Close()
	}
	assert.Error(t, err, "nothing answers at an unprogrammed service address")
	after, err := node.Drops(node.ClusterLeak)
	require.NoError(t, err)
	assert.Greater(t, after, before, "the leak rule dropped the host's packets to the service range")
}

// listener accepts TCP connections on an address of the node and records who connected.
type listener struct {
	addr string
	mu   sync.Mutex
	from []netip.Addr
}

func listen(t *testing.T, ip netip.Addr) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	l := &listener{addr: ln.Addr().String()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			peer := conn.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
			l.mu.Lock()
			l.from = append(l.from, peer)
			l.mu.Unlock()
			_ = conn.Close()
		}
	}()
	return l
}

func (l *listener) count() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.from) }

func (l *listener) peers() []netip.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]netip.Addr(nil), l.from...)
}

// dial runs e2e-dial in a pod of the pause image (the binary comes read-only from the node's
// HostBin) under the charts' security context, and returns whether it connected and its output.
func (c *Cluster) dial(t *testing.T, ns, name, addr string) (bool, string) {
	t.Helper()
	ctx := context.Background()
	pod := c.helperPod(name, []string{"/hostbin/e2e-dial", addr})
	_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	var done *corev1.Pod
	testenv.WaitFor(t, 2*time.Minute, func() (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		done = p
		return err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed), err
	}, "pod %s/%s ends\n%s", ns, name, lazy(func() string { return c.diagnose(name) }))
	out := c.logs(ctx, ns, name, "main")
	return done.Status.Phase == corev1.PodSucceeded && strings.Contains(out, "connected"), out
}

// helperPod is a pod of the pause image that runs a helper binary from HostBin, with the
// restricted security context every Sluice chart uses.
func (c *Cluster) helperPod(name string, command []string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr(false),
			SecurityContext:              restrictedPod(),
			Containers: []corev1.Container{{
				Name: "main", Image: c.Images.Refs["pause"], ImagePullPolicy: corev1.PullNever,
				Command:         command,
				SecurityContext: restrictedContainer(),
				VolumeMounts:    []corev1.VolumeMount{{Name: "hostbin", MountPath: "/hostbin", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{hostPathVolume("hostbin", c.Node.HostBin())},
		},
	}
}
