package suite

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sluicehq/sluice/e2e/harness"
	"github.com/sluicehq/sluice/e2e/node"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/gitea"
)

// giteaIP is the git server's Service address, fixed so its certificate can name it before the
// Service exists. The host, which has no cluster DNS, uses it; pods and the controllers use the
// Service's name (giteaHost).
const giteaIP = "10.96.100.10"

// gitServer is the Gitea pod: a client of its API as its admin, through its address, and what
// the controllers are given: its URL by the Service's name and the CA of its certificate.
type gitServer struct {
	*gitea.Server
	// InClusterURL is https://gitea.<namespace>.svc, as pods resolve it.
	InClusterURL string
	CAPEM        []byte
}

// giteaPod runs Gitea (hack/tools/gitea/build.sh) as a pod behind a Service, over HTTPS with a
// certificate from the node's CA. Gitea is linked against glibc and runs git, so the pod mounts
// the node's /usr (and /usr/bin as /bin, /usr/lib as /lib) read-only into the pause image, beside the Gitea folder; it runs as 65532 with
// a read-only root filesystem like the charts.
func (c *Cluster) giteaPod(t *testing.T, ns string) gitServer {
	t.Helper()
	ctx := context.Background()
	dir, err := harness.GiteaDir(c.Root)
	require.NoError(t, err)
	host := "gitea." + ns + ".svc"
	names := []string{host, host + "." + node.ClusterDomain}
	certPEM, keyPEM, err := c.Node.IssueServing("gitea", names, net.ParseIP(giteaIP), net.IPv4(127, 0, 0, 1))
	require.NoError(t, err)
	caPEM, err := c.Node.CAPEM()
	require.NoError(t, err)
	password := "e2e-" + randomHex(t, 12)
	core := c.Kube.CoreV1()
	_, err = core.Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Data:       map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "app.ini": giteaAppIni(t)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea-passwd"},
		// git and Gitea look the user up; the pause image has no /etc.
		Data: map[string]string{"passwd": "gitea:x:65532:65532:gitea:/data/home:/usr/sbin/nologin\n"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = core.Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Spec: corev1.ServiceSpec{
			ClusterIP: giteaIP, Selector: map[string]string{"app": "gitea"},
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("https")}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = core.Pods(ns).Create(ctx, c.giteaPodSpec(dir, password), metav1.CreateOptions{})
	require.NoError(t, err)
	testenv.WaitFor(t, 3*time.Minute, func() (bool, error) {
		p, err := core.Pods(ns).Get(ctx, "gitea", metav1.GetOptions{})
		return err == nil && podReady(p), err
	}, "the gitea pod is Ready\n%s", lazy(func() string { return c.diagnose("gitea") }))

	// kube-proxy programs the Service once the pod is an endpoint: wait until it routes.
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(giteaIP, "443"), time.Second)
		if err == nil {
			_ = conn.Close()
		}
		return err == nil, err
	}, "the Gitea Service routes to the pod")
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	served := &servedCertificates{}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: served.config(pool)}}
	srv, err := gitea.Remote(ctx, "https://"+giteaIP, "sluice", password, client)
	require.NoError(t, err, "the host reaches Gitea through its Service; it served %s", served)
	return gitServer{Server: srv, InClusterURL: "https://" + host, CAPEM: caPEM}
}

// servedCertificates verifies servers against a pool, as the default does, and records what
// each one presented, for a failure message.
type servedCertificates struct {
	mu   sync.Mutex
	seen []string
}

func (s *servedCertificates) config(pool *x509.CertPool) *tls.Config {
	return &tls.Config{
		// Verified below, exactly as crypto/tls would, after recording the certificate.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			leaf := cs.PeerCertificates[0]
			s.mu.Lock()
			s.seen = append(s.seen, fmt.Sprintf("%s (issuer %s, IPs %v, DNS %v, serial %s)", leaf.Subject, leaf.Issuer, leaf.IPAddresses, leaf.DNSNames, leaf.SerialNumber))
			s.mu.Unlock()
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := leaf.Verify(x509.VerifyOptions{DNSName: cs.ServerName, Roots: pool, Intermediates: inter})
			return err
		},
	}
}

func (s *servedCertificates) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.seen, "; ")
}

func (c *Cluster) giteaPodSpec(dir, password string) *corev1.Pod {
	gitea := func(name string, args ...string) corev1.Container {
		return corev1.Container{
			Name: name, Image: c.Images.Refs["pause"], ImagePullPolicy: corev1.PullNever,
			Command: append([]string{"/opt/gitea/gitea", "--config", "/etc/gitea/app.ini", "--work-path", "/data"}, args...),
			Env: []corev1.EnvVar{
				{Name: "USER", Value: "gitea"}, {Name: "HOME", Value: "/data/home"},
				{Name: "PATH", Value: "/usr/bin"}, {Name: "TMPDIR", Value: "/tmp"},
			},
			SecurityContext: restrictedContainer(),
			VolumeMounts: []corev1.VolumeMount{
				{Name: "gitea", MountPath: "/opt/gitea", ReadOnly: true},
				{Name: "usr", MountPath: "/usr", ReadOnly: true},
				// git runs local transports through /bin/sh.
				{Name: "bin", MountPath: "/bin", ReadOnly: true},
				{Name: "lib", MountPath: "/lib", ReadOnly: true},
				{Name: "lib64", MountPath: "/lib64", ReadOnly: true},
				{Name: "config", MountPath: "/etc/gitea", ReadOnly: true},
				{Name: "passwd", MountPath: "/etc/passwd", SubPath: "passwd", ReadOnly: true},
				{Name: "data", MountPath: "/data"},
				{Name: "tmp", MountPath: "/tmp"},
			},
		}
	}
	web := gitea("gitea", "web")
	web.Ports = []corev1.ContainerPort{{Name: "https", ContainerPort: 3000}}
	web.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/api/healthz", Port: intstr.FromString("https"), Scheme: corev1.URISchemeHTTPS}},
		PeriodSeconds: 1,
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea", Labels: map[string]string{"app": "gitea"}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr(false),
			SecurityContext:              restrictedPod(),
			InitContainers: []corev1.Container{
				gitea("migrate", "migrate"),
				gitea("admin", "admin", "user", "create", "--admin", "--username", "sluice", "--password", password,
					"--email", "sluice@example.com", "--must-change-password=false"),
			},
			Containers: []corev1.Container{web},
			Volumes: []corev1.Volume{
				hostPathVolume("gitea", dir),
				hostPathVolume("usr", "/usr"),
				hostPathVolume("bin", "/usr/bin"),
				hostPathVolume("lib", "/usr/lib"),
				hostPathVolume("lib64", "/usr/lib64"),
				{Name: "config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "gitea", Items: []corev1.KeyToPath{{Key: "app.ini", Path: "app.ini"}, {Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}},
				}}},
				{Name: "passwd", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gitea-passwd"}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}
