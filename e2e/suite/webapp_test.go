package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/e2e/harness"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
	"github.com/sluicehq/sluice/testenv/gitea"
)

// webReplicas is each environment's Deployment size: a rolling update replaces one pod at a time
// (maxUnavailable 1, no surge), so a release whose pods fail readiness leaves the environment
// with one Ready pod of the old version and one of the new that never becomes Ready.
const webReplicas = 2

// webApp is the e2e-web app (e2e/cmd/e2e-web) in one namespace, deployed by real Flux from the
// environment branches of a repository on the Gitea pod: each environment by its own
// GitRepository and Kustomization, web-<env>, with a one-hour interval (so each fetch follows a
// requestedAt), applied as the namespace's ServiceAccount flux-applier, which may edit
// Deployments there and nothing else. The test hydrates, as Argo CD's source hydrator would.
type webApp struct {
	c    *Cluster
	ns   string
	srv  *gitea.Server
	name string
	repo *git.Repository
	// serverURL and cloneURL are Gitea and the repository as pods reach them, by the Gitea
	// Service's name.
	serverURL, cloneURL string
	// dry is the dry commit each environment branch was last hydrated from.
	dry map[string]string
}

// newWebApp creates the repository, hydrates version 1.0.0 onto every environment, and waits
// until Flux runs it, Ready, in every environment.
func (c *Cluster) newWebApp(t *testing.T, ns string, server gitServer, name string) *webApp {
	t.Helper()
	ctx := context.Background()
	require.NotEmpty(t, c.Images.Refs["e2e-web"], "no e2e-web image: %s", harness.E2EImagesHint)
	hostURL, err := server.CreateRepo(ctx, name)
	require.NoError(t, err)
	cache, err := git.NewCache(t.TempDir(), nil)
	require.NoError(t, err)
	repo, err := cache.Open(hostURL, git.Auth{Username: server.AdminUser, Password: server.Token, CABundle: server.CAPEM}, git.Options{})
	require.NoError(t, err)
	a := &webApp{c: c, ns: ns, srv: server.Server, name: name, repo: repo, serverURL: server.InClusterURL,
		cloneURL: server.InClusterURL + strings.TrimPrefix(hostURL, server.URL), dry: map[string]string{}}
	d0 := a.dryCommit(t, "web 1.0.0")
	for _, env := range environments {
		a.hydrate(t, env, env, d0, "1.0.0")
	}
	a.fluxApplier(t)
	_, err = c.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "flux-git"},
		Data: map[string][]byte{"username": []byte(server.AdminUser), "password": []byte(server.Token),
			"ca.crt": server.CAPEM},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, env := range environments {
		a.createFluxObjects(t, env)
	}
	// Deleted while their ServiceAccount can still prune, before the namespace goes.
	t.Cleanup(func() { a.deleteFluxObjects(t) })
	for _, env := range environments {
		a.waitRuns(t, env, "1.0.0")
	}
	return a
}

// fluxApplier is the ServiceAccount the Kustomizations apply as: Deployments of the namespace.
func (a *webApp) fluxApplier(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	_, err := a.c.Kube.CoreV1().ServiceAccounts(a.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "flux-applier"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = a.c.Kube.RbacV1().Roles(a.ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "flux-applier"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = a.c.Kube.RbacV1().RoleBindings(a.ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "flux-applier"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "flux-applier"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "flux-applier", Namespace: a.ns}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func (a *webApp) createFluxObjects(t *testing.T, env string) {
	t.Helper()
	ctx := context.Background()
	objects := []*unstructured.Unstructured{
		{Object: map[string]any{
			"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
			"metadata": map[string]any{"name": "web-" + env},
			"spec": map[string]any{"url": a.cloneURL, "interval": "1h", "timeout": "60s",
				"ref": map[string]any{"branch": env}, "secretRef": map[string]any{"name": "flux-git"}},
		}},
		{Object: map[string]any{
			"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": "web-" + env},
			"spec": map[string]any{"interval": "1h", "retryInterval": "5s", "timeout": "60s", "path": "./deploy", "prune": true,
				"targetNamespace": a.ns, "serviceAccountName": "flux-applier",
				"sourceRef": map[string]any{"kind": "GitRepository", "name": "web-" + env}},
		}},
	}
	for i, gvr := range []schema.GroupVersionResource{flux.GitRepositories, flux.Kustomizations} {
		_, err := a.c.Dynamic.Resource(gvr).Namespace(a.ns).Create(ctx, objects[i], metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// deleteFluxObjects deletes the Kustomizations, which prune the Deployments as flux-applier, then
// the GitRepositories, and waits until Flux's finalizers let them go.
func (a *webApp) deleteFluxObjects(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, gvr := range []schema.GroupVersionResource{flux.Kustomizations, flux.GitRepositories} {
		client := a.c.Dynamic.Resource(gvr).Namespace(a.ns)
		require.NoError(t, client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
		testenv.WaitFor(t, 2*time.Minute, func() (bool, error) {
			list, err := client.List(ctx, metav1.ListOptions{})
			return err == nil && len(list.Items) == 0, err
		}, "Flux lets the %s of %s go", gvr.Resource, a.ns)
	}
}

// webManifest is environment env's rendering of version: the Deployment web-<env>.
func (a *webApp) webManifest(env, version string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-%[1]s
  labels: {app: web, env: %[1]s}
spec:
  replicas: %[4]d
  selector:
    matchLabels: {app: web, env: %[1]s}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 0, maxUnavailable: 1}
  template:
    metadata:
      labels: {app: web, env: %[1]s}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 5
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile: {type: RuntimeDefault}
      containers:
        - name: web
          image: %[3]s
          imagePullPolicy: Never
          args: ["--version=%[2]s"]
          ports: [{name: http, containerPort: 8080}]
          readinessProbe:
            httpGet: {path: /readyz, port: http}
            periodSeconds: 1
          livenessProbe:
            httpGet: {path: /healthz, port: http}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
`, env, version, a.c.Images.Refs["e2e-web"], webReplicas)
}

func (a *webApp) dryCommit(t *testing.T, msg string) string {
	t.Helper()
	ctx := context.Background()
	_ = a.repo.Fetch(ctx, "main")
	sha, err := a.repo.CommitFiles(ctx, git.CommitRequest{
		Branch: "main", Message: msg, Files: map[string][]byte{"apps/web/release.yaml": []byte("release: " + msg + "\n")},
	})
	require.NoError(t, err)
	return sha
}

// hydrate writes env's rendering of version, from dry, onto branch (created from env when
// missing) and returns the commit.
func (a *webApp) hydrate(t *testing.T, env, branch, dry, version string) string {
	t.Helper()
	ctx := context.Background()
	_ = a.repo.Fetch(ctx, env, branch)
	if _, err := a.repo.Resolve(branch); err != nil && branch != env {
		tip, err := a.repo.Resolve(env)
		require.NoError(t, err)
		require.NoError(t, a.repo.CreateBranch(ctx, branch, tip))
		require.NoError(t, a.repo.Fetch(ctx, branch))
	}
	sha, err := a.repo.CommitFiles(ctx, git.CommitRequest{
		Branch: branch, Message: fmt.Sprintf("hydrate %s: web %s", dry[:7], version),
		Files: map[string][]byte{
			"hydrator.metadata": []byte(fmt.Sprintf(`{"drySha":%q}`, dry)),
			"deploy/web.yaml":   []byte(a.webManifest(env, version)),
		},
	})
	require.NoError(t, err)
	a.dry[branch] = dry
	return sha
}

// propose commits a dry change and hydrates it onto every <env>-next branch, each environment
// rendering the version versions names for it.
func (a *webApp) propose(t *testing.T, msg string, versions map[string]string) string {
	t.Helper()
	dry := a.dryCommit(t, msg)
	for _, env := range environments {
		a.hydrate(t, env, env+"-next", dry, versions[env])
	}
	return dry
}

func podVersion(p corev1.Pod) string {
	for _, arg := range p.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(arg, "--version="); ok {
			return v
		}
	}
	return ""
}

// pods are env's pods of the app that are not being deleted.
func (a *webApp) pods(env string) ([]corev1.Pod, error) {
	list, err := a.c.Kube.CoreV1().Pods(a.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web,env=" + env})
	if err != nil {
		return nil, err
	}
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live, nil
}

// describePods is one line per pod of env: name, version, Ready.
func (a *webApp) describePods(env string) string {
	pods, err := a.pods(env)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "%s version=%s ready=%t; ", p.Name, podVersion(p), podReady(&p))
	}
	return b.String()
}

// runs reports whether env runs version: all its pods, webReplicas of them, run it and are Ready.
func (a *webApp) runs(env, version string) (bool, error) {
	pods, err := a.pods(env)
	if err != nil || len(pods) != webReplicas {
		return false, err
	}
	for _, p := range pods {
		if podVersion(p) != version || !podReady(&p) {
			return false, nil
		}
	}
	return true, nil
}

// waitRuns waits until env runs version and returns when it saw it.
func (a *webApp) waitRuns(t *testing.T, env, version string) time.Time {
	t.Helper()
	testenv.WaitFor(t, 4*time.Minute, func() (bool, error) { return a.runs(env, version) },
		"%s runs web %s in %s (pods: %s)\n%s", env, version, a.ns, lazy(func() string { return a.describePods(env) }),
		lazy(func() string { return a.fluxState(env) + a.c.diagnose(env) }))
	return time.Now()
}

// fluxState is the status of env's GitRepository and Kustomization, for a failed wait.
func (a *webApp) fluxState(env string) string {
	var b strings.Builder
	for _, gvr := range []schema.GroupVersionResource{flux.GitRepositories, flux.Kustomizations} {
		obj, err := a.c.Dynamic.Resource(gvr).Namespace(a.ns).Get(context.Background(), "web-"+env, metav1.GetOptions{})
		if err != nil {
			fmt.Fprintf(&b, "%s web-%s: %v\n", gvr.Resource, env, err)
			continue
		}
		status, _ := json.Marshal(obj.Object["status"])
		fmt.Fprintf(&b, "%s web-%s annotations %v status %s\n", gvr.Resource, env, obj.GetAnnotations(), status)
	}
	return b.String()
}

// wake asks env's GitRepository to fetch now, as `flux reconcile source git` does.
func (a *webApp) wake(t *testing.T, env string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, "reconcile.fluxcd.io/requestedAt", time.Now().Format(time.RFC3339Nano))
	_, err := a.c.Dynamic.Resource(flux.GitRepositories).Namespace(a.ns).Patch(context.Background(), "web-"+env,
		types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "e2e-floor"})
	require.NoError(t, err)
}

// openAndMerge opens a pull request head -> base on Gitea and merges it, retrying while Gitea
// still computes whether it can, as a script on its API would.
func (a *webApp) openAndMerge(t *testing.T, head, base string) {
	t.Helper()
	ctx := context.Background()
	_ = a.repo.Fetch(ctx, head)
	headSHA, err := a.repo.Resolve(head)
	require.NoError(t, err)
	var pr struct {
		Number int64 `json:"number"`
	}
	require.NoError(t, a.srv.API(ctx, "POST", "/repos/"+a.srv.AdminUser+"/"+a.name+"/pulls",
		map[string]any{"head": head, "base": base, "title": "promote " + head + " into " + base}, &pr))
	var last error
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		last = a.srv.API(ctx, "POST", fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", a.srv.AdminUser, a.name, pr.Number),
			map[string]any{"Do": "merge", "head_commit_id": headSHA}, nil)
		return last == nil, nil
	}, "Gitea merges pull request %d (%s into %s): %v", pr.Number, head, base, lazy(func() string { return fmt.Sprint(last) }))
}

// versionServed asks a pod for its version over HTTP, from the node.
func versionServed(p corev1.Pod) (string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + p.Status.PodIP + ":8080/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b)), err
}
