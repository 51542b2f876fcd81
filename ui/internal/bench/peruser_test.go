package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// readableNamespaces is how many of the namespaces the person of the per-user benchmark may read.
const readableNamespaces = 10

var (
	// personUI serves people behind a sidecar proxy: identity headers on its Unix socket.
	personUI     *exec.Cmd
	personSocket string
)

// startPersonUI runs the UI in proxy mode, serving people on a Unix socket as a sidecar proxy
// would reach it, and lets the group bench-readers list strategies in the first 10 namespaces.
// It waits until a reader sees their 100 strategies.
func startPersonUI() error {
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bench-readers"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"promoter.sluice.dev"}, Resources: []string{"promotionstrategies"}, Verbs: []string{"get", "list", "watch"}}}}
	if _, err := env.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return err
	}
	for n := range readableNamespaces {
		ns := fmt.Sprintf("team-%02d", n)
		if _, err := env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench-readers"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "bench-readers"},
			Subjects: []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "bench-readers"}}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	bin, err := uiBinary()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ui-bench")
	if err != nil {
		return err
	}
	personSocket = filepath.Join(dir, "ui.sock")
	personUI = exec.Command(bin, "--kubeconfig", env.Kubeconfig, "--identity", "proxy", "--proxy-socket", personSocket,
		"--listen", "127.0.0.1:0", "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	if err := personUI.Start(); err != nil {
		return err
	}
	want := fmt.Sprintf("%d of %d PromotionStrategies", pageSize, strategies/namespaces*readableNamespaces)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if body, err := getAs("reader", "/pipelines"); err == nil && strings.Contains(body, want) {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("sluice-ui in proxy mode did not show a reader %q within 2 minutes", want)
}

// pageSize is the pipelines page's.
const pageSize = 100

// personRequest is a GET of path on the person UI's socket, as the sidecar proxy forwards user's.
func personRequest(user, path string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, "http://sluice-ui"+path, nil)
	req.Header.Set("X-Forwarded-User", user)
	req.Header.Set("X-Forwarded-Groups", "bench-readers")
	return req
}

var socketClient = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", personSocket)
}}}

func getAs(user, path string) (string, error) {
	resp, err := socketClient.Do(personRequest(user, path))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// BenchmarkPerUserPipelineList: the pipeline list of a person who may read 10 of the 100
// namespaces (100 of the 1,000 strategies), filtered with SubjectAccessReviews: warm (the
// answers remembered, as for every page within 30 s of the person's last) and cold (a person
// never seen: one review per namespace), beside the unfiltered list in local mode.
func BenchmarkPerUserPipelineList(b *testing.B) {
	b.Run("unfiltered", func(b *testing.B) {
		measure(b, func() (*http.Response, error) { return uiClient.Get(uiURL + "/pipelines") })
	})
	b.Run("reader-of-10-namespaces-warm", func(b *testing.B) {
		measure(b, func() (*http.Response, error) { return socketClient.Do(personRequest("reader", "/pipelines")) })
	})
	b.Run("reader-of-10-namespaces-cold", func(b *testing.B) {
		n := 0
		measure(b, func() (*http.Response, error) {
			n++
			return socketClient.Do(personRequest(fmt.Sprintf("reader-%d-%d", time.Now().UnixNano(), n), "/pipelines"))
		})
	})
}

// measure reports the mean time to the first byte of the page get returns.
func measure(b *testing.B, get func() (*http.Response, error)) {
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		resp, err := get()
		require.NoError(b, err)
		total += readFirstByte(b, resp, start)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-first-byte/op")
}
