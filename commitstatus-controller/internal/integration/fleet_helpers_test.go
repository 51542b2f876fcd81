package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/setup"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/testenv"
	giteatest "github.com/sluicehq/sluice/testenv/gitea"
)

// cluster is one control plane of the fleet, with its admin clients.
type cluster struct {
	name string
	env  *testenv.Env
}

// startSecondCluster starts another control plane, with every Sluice CRD, for the rest of the
// test: cluster B of a fleet. Nothing of it is stored in the first one.
func startSecondCluster(t *testing.T) cluster {
	t.Helper()
	b, err := testenv.Start(testenv.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Stop() })
	return cluster{name: "B", env: b}
}

// installAllCRDs installs every Sluice CRD on the shared control plane: a management cluster
// runs the promoter beside this controller.
func installAllCRDs(t testing.TB) {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	require.NoError(t, env.InstallCRDPaths(filepath.Join(root, "api", "crds")))
}

// buildController builds a controller's binary from this checkout, once per test binary.
func buildController(t testing.TB, name string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("sluice-fleet-bin-%d", os.Getpid()))
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/"+name)
	cmd.Dir = filepath.Join(root, name)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", name, out)
	testenv.OnStop(func() { _ = os.RemoveAll(dir) })
	return bin
}

// runController runs a controller binary against kubeconfig until the test ends, logging to a
// file kept in the test's temporary folder (shown when the test fails).
func runController(t testing.TB, bin, kubeconfig string, args ...string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), filepath.Base(bin)+".log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig, "--metrics-bind-address", "0",
		"--health-probe-bind-address", "0", "--log-format", "text"}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		_ = logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("%s log:\n%s", filepath.Base(bin), testenv.Tail(b, 40))
			}
		}
	})
}

// giteaApp creates the repository "app" on srv with one dry commit on main, and returns its
// clone URL, a clone and that commit.
func giteaApp(t testing.TB, srv *giteatest.Server) (string, *git.Repository, string) {
	t.Helper()
	cloneURL, err := srv.CreateRepo(context.Background(), "app")
	require.NoError(t, err)
	repo, dry := cloneWithDry(t, srv, cloneURL)
	return cloneURL, repo, dry
}

// cloneWithDry clones an empty Gitea repository and commits the first dry commit to main.
func cloneWithDry(t testing.TB, srv *giteatest.Server, cloneURL string) (*git.Repository, string) {
	t.Helper()
	ctx := context.Background()
	cache, err := git.NewCache(t.TempDir(), nil)
	require.NoError(t, err)
	repo, err := cache.Open(cloneURL, git.Auth{Username: srv.AdminUser, Password: srv.Token}, git.Options{})
	require.NoError(t, err)
	_ = repo.Fetch(ctx, "main")
	dry, err := repo.CommitFiles(ctx, git.CommitRequest{Branch: "main", Files: map[string][]byte{"values.yaml": []byte("v: 0\n")}, Message: "initial"})
	require.NoError(t, err)
	return repo, dry
}

// hydrate writes a hydrated commit for dry onto branch (created from base when missing), with
// the hydrator.metadata file, as Argo CD's source hydrator lays it out.
func hydrate(t testing.TB, repo *git.Repository, base, branch, dry string) string {
	t.Helper()
	ctx := context.Background()
	_ = repo.Fetch(ctx, base, branch)
	if _, err := repo.Resolve(branch); err != nil && base != "" {
		tip, err := repo.Resolve(base)
		require.NoError(t, err)
		require.NoError(t, repo.CreateBranch(ctx, branch, tip))
		require.NoError(t, repo.Fetch(ctx, branch))
	}
	sha, err := repo.CommitFiles(ctx, git.CommitRequest{
		Branch:  branch,
		Files:   map[string][]byte{"hydrator.metadata": []byte(fmt.Sprintf(`{"drySha":%q}`, dry)), "manifest.yaml": []byte(branch + " " + dry + "\n")},
		Message: "hydrate " + dry[:7],
	})
	require.NoError(t, err)
	return sha
}

// giteaOn creates, in namespace ns of c, the Secret, ScmProvider "gitea" and ScmRepository "app"
// that reach the Gitea repository: each cluster holds its own token for the SCM, and nothing of
// the other cluster.
func giteaOn(t testing.TB, c cluster, ns string, srv *giteatest.Server, cloneURL string) {
	t.Helper()
	giteaOnRepo(t, c, ns, srv, cloneURL, "app")
}

// giteaOnRepo is giteaOn for the Gitea repository named giteaRepo (the ScmRepository is "app").
func giteaOnRepo(t testing.TB, c cluster, ns string, srv *giteatest.Server, cloneURL, giteaRepo string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		require.Contains(t, err.Error(), "already exists")
	}
	_, err = c.env.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Data: map[string][]byte{
			scmv1alpha1.SecretKeyToken: []byte(srv.Token), scmv1alpha1.SecretKeyWebhookSecret: []byte("hook-secret"),
			scmv1alpha1.GitSecretKeyUsername: []byte(srv.AdminUser), scmv1alpha1.GitSecretKeyPassword: []byte(srv.Token),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.env.Sluice.ScmV1alpha1().ScmProviders(ns).Create(ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGitea, BaseURL: srv.URL, AllowInsecureLoopbackHTTP: true,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "gitea"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.env.Sluice.ScmV1alpha1().ScmRepositories(ns).Create(ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: scmv1alpha1.ScmRepositorySpec{
			URL: cloneURL, AllowInsecureLoopbackHTTP: true, ProviderRef: scmv1alpha1.LocalObjectReference{Name: "gitea"},
			Owner: srv.AdminUser, Name: giteaRepo,
			Auth: &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthBasic, SecretRef: scmv1alpha1.LocalObjectReference{Name: "gitea"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// statusHook has Gitea deliver status events of the repository "app" to the import's receiver
// at addr.
func statusHook(t testing.TB, srv *giteatest.Server, addr net.Addr, ns string) {
	t.Helper()
	statusHookOn(t, srv, "app", addr, ns)
}

// statusHookOn is statusHook for the Gitea repository giteaRepo.
func statusHookOn(t testing.TB, srv *giteatest.Server, giteaRepo string, addr net.Addr, ns string) {
	t.Helper()
	require.NoError(t, srv.API(context.Background(), "POST", "/repos/"+srv.AdminUser+"/"+giteaRepo+"/hooks", map[string]any{
		"type": "gitea", "active": true, "events": []string{"status"},
		"config": map[string]string{
			"url":          fmt.Sprintf("http://%s/hooks/%s/gitea", addr, ns),
			"content_type": "json", "secret": "hook-secret",
		},
	}, nil))
}

// importerWithWebhook configures the controller of the management cluster: the status webhook
// receiver on a free loopback port, and a poll so long that only a delivery can wake the import
// while a test waits.
func importerWithWebhook(t testing.TB, poll time.Duration) (func(*setup.Config), net.Addr) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return func(c *setup.Config) {
		c.WebhookListener = ln
		c.ImportPollInterval = poll
	}, ln.Addr()
}

// strategyEnv returns the status of the strategy's environment branch.
func strategyEnv(ps *promoterv1alpha1.PromotionStrategy, branch string) promoterv1alpha1.EnvironmentStatus {
	for _, e := range ps.Status.Environments {
		if e.Branch == branch {
			return e
		}
	}
	return promoterv1alpha1.EnvironmentStatus{}
}
