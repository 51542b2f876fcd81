package integration

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// readerRules read the kinds the per-user tests show: strategies, gates, health checks and the
// Kustomizations gates hold.
var readerRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"promoter.sluice.dev"}, Resources: []string{"promotionstrategies"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"gating.sluice.dev"}, Resources: []string{"gates"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"health.sluice.dev"}, Resources: []string{"healthchecks"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"kustomize.toolkit.fluxcd.io"}, Resources: []string{"kustomizations"}, Verbs: []string{"get", "list", "watch"}},
}

// readers lets subject read the per-user kinds in ns, with a Role and a RoleBinding.
func readers(t *testing.T, ns string, subject rbacv1.Subject) {
	t.Helper()
	ctx := context.Background()
	name := "sluice-readers-" + strings.ToLower(subject.Name)
	_, err := env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: readerRules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}, Subjects: []rbacv1.Subject{subject}}, metav1.CreateOptions{})
	require.NoError(t, err)
	user, groups := subject.Name, []string(nil)
	if subject.Kind == "Group" {
		user, groups = "someone-in-"+subject.Name, []string{subject.Name}
	}
	if subject.Name == "system:unauthenticated" {
		user = "system:anonymous"
	}
	waitAllowed(t, user, groups, authorizationv1.ResourceAttributes{Verb: "list", Group: "promoter.sluice.dev", Resource: "promotionstrategies", Namespace: ns})
}

// clusterReader lets user read the per-user kinds in every namespace: the control that the UI
// filters per person, not by hiding everything.
func clusterReader(t *testing.T, user string) {
	t.Helper()
	ctx := context.Background()
	name := "sluice-readers-" + user
	_, err := env.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: readerRules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = env.Kube.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// tenantObjects creates, in ns, a strategy, a gate freeze, a health check and a Kustomization
// held-in-NS that the gate gateNS/freeze holds.
func tenantObjects(t *testing.T, ns, gateNS string) {
	t.Helper()
	createStrategy(t, ns)
	createGate(t, ns, "freeze")
	_, err := env.Sluice.HealthV1alpha1().HealthChecks(ns).Create(context.Background(), &healthv1alpha1.HealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "checkout-health"},
		Spec: healthv1alpha1.HealthCheckSpec{Targets: []healthv1alpha1.Target{{Object: &healthv1alpha1.ObjectReference{
			APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	createKustomization(t, ns, "held-in-"+ns, gateNS+"/freeze")
}

// asUser gets path from the UI's proxy socket as user, as the sidecar proxy forwards it.
func asUser(t *testing.T, socket, user, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://sluice-ui"+path, nil)
	require.NoError(t, err)
	req.Header.Set("X-Forwarded-User", user)
	resp, err := socketClient(socket).Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestAPersonSeesOnlyTheNamespacesTheyMayRead: carol, whom a RoleBinding lets read namespace A,
// sees A's pipeline, gate, health check and held Kustomization on every page and in search,
// and learns no name of namespace B: not on a list, not on a page of B's objects (404, as if
// they did not exist), not among the objects A's gate holds, not by search. dave, who may read
// every namespace, sees both through the same UI.
func TestAPersonSeesOnlyTheNamespacesTheyMayRead(t *testing.T) {
	socket := proxySocketPath(t)
	startUI(t, env.Config, setup.Config{Identity: setup.IdentityProxy, UserHeader: "X-Forwarded-User",
		GroupsHeader: "X-Forwarded-Groups", ProxySocket: socket})
	a, b := newNamespace(t), newNamespace(t)
	tenantObjects(t, a, a)
	tenantObjects(t, b, a)
	readers(t, a, rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "carol"})
	clusterReader(t, "dave")

	// dave sees both: the informers hold them.
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		_, body := asUser(t, socket, "dave", "/gates/"+a+"/freeze")
		_, all := asUser(t, socket, "dave", "/search?q=checkout")
		return strings.Contains(body, "held-in-"+b) && strings.Contains(all, b+"/checkout") && strings.Contains(all, b+"/checkout-health"), nil
	}, "dave sees both namespaces")

	pages := map[string][]string{
		"/pipelines":              {a + "/checkout"},
		"/gates":                  {a + "/freeze"},
		"/health":                 {"checkout-health"},
		"/gates/" + a + "/freeze": {"held-in-" + a},
		"/search?q=ui-":           {a + "/checkout", a + "/freeze", a + "/checkout-health"},
		"/search?q=checkout":      {a + "/checkout", a + "/checkout-health"},
		"/search?q=" + b:          nil,
	}
	for path, want := range pages {
		status, body := asUser(t, socket, "carol", path)
		assert.Equal(t, http.StatusOK, status, path)
		for _, w := range want {
			assert.Contains(t, body, w, "carol sees %s on %s", w, path)
		}
		assert.NotContains(t, body, b+"/", "carol learns no name of namespace B on %s", path)
		assert.NotContains(t, body, "held-in-"+b, path)
	}
	for _, path := range []string{"/pipelines/" + b + "/checkout", "/gates/" + b + "/freeze", "/pipelines/" + b + "/checkout/history"} {
		status, body := asUser(t, socket, "carol", path)
		assert.Equal(t, http.StatusNotFound, status, path)
		assert.NotContains(t, body, "held-in-", path)
	}
	// bob is named, and may read nothing: he sees nothing at all.
	_, body := asUser(t, socket, "bob", "/search?q=checkout")
	assert.NotContains(t, body, a)
	assert.NotContains(t, body, b)
}

// TestTheLiveStreamTellsAPersonOnlyChangesTheyMayRead: carol's event stream is not told of a
// change in namespace B (dave's stream shows the UI saw it), and is told of the next change in
// A alone.
func TestTheLiveStreamTellsAPersonOnlyChangesTheyMayRead(t *testing.T) {
	socket := proxySocketPath(t)
	startUI(t, env.Config, setup.Config{Identity: setup.IdentityProxy, UserHeader: "X-Forwarded-User",
		GroupsHeader: "X-Forwarded-Groups", ProxySocket: socket})
	a, b := newNamespace(t), newNamespace(t)
	createStrategy(t, a)
	createStrategy(t, b)
	createGate(t, a, "freeze")
	readers(t, a, rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "carol"})
	clusterReader(t, "dave")
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		_, body := asUser(t, socket, "dave", "/pipelines?q="+b)
		return strings.Contains(body, b+"/checkout"), nil
	}, "the UI has read B's strategy")

	carol, dave := changes(t, socket, "carol"), changes(t, socket, "dave")
	ctx := context.Background()
	_, err := env.Sluice.PromoterV1alpha1().PromotionStrategies(b).Patch(ctx, "checkout", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"touched":"b"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	waitChange(t, dave, "PromotionStrategy")
	_, err = env.Sluice.GatingV1alpha1().Gates(a).Patch(ctx, "freeze", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"touched":"a"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	news := firstNews(t, carol)
	assert.Contains(t, news, "Gate", "carol's first news is A's gate")
	assert.NotContains(t, news, "PromotionStrategy", "B's strategy was never told to her")
}

// changes opens user's event stream on the socket and sends each change's kinds, once the
// stream is ready.
func changes(t *testing.T, socket, user string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://sluice-ui/events", nil)
	require.NoError(t, err)
	req.Header.Set("X-Forwarded-User", user)
	resp, err := socketClient(socket).Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); _ = resp.Body.Close() })
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() && lines.Text() != "data: ok" {
	}
	out := make(chan string, 100)
	go func() {
		defer close(out)
		for lines.Scan() {
			if kinds, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				out <- kinds
			}
		}
	}()
	return out
}

// firstNews is the first change told on stream that names a kind: "*" alone (the kinds
// installed changed, as another test's CRDs come and go) names no object, and is passed over.
func firstNews(t *testing.T, stream <-chan string) []string {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case kinds, ok := <-stream:
			require.True(t, ok, "the stream ended")
			if news := strings.Split(kinds, ","); !slices.Equal(news, []string{"*"}) {
				return news
			}
		case <-timeout:
			require.FailNow(t, "no change told within a minute")
		}
	}
}

// waitChange waits until the stream names kind.
func waitChange(t *testing.T, stream <-chan string, kind string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case kinds, ok := <-stream:
			require.True(t, ok, "the stream ended")
			if strings.Contains(kinds, kind) {
				return
			}
		case <-timeout:
			t.Fatalf("no %s change within a minute", kind)
		}
	}
}

// TestAnonymousReadersSeeWhatSystemAnonymousMayRead: with --anonymous=read, a visitor the UI
// cannot name reads what the API server's anonymous identity may read (here a RoleBinding of
// system:unauthenticated in namespace A), not what the UI's ServiceAccount may.
func TestAnonymousReadersSeeWhatSystemAnonymousMayRead(t *testing.T) {
	base := startUI(t, env.Config, setup.Config{Identity: setup.IdentityNone, Anonymous: setup.AnonymousRead})
	a, b := newNamespace(t), newNamespace(t)
	createStrategy(t, a)
	createStrategy(t, b)
	readers(t, a, rbacv1.Subject{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:unauthenticated"})
	body := waitPage(t, http.DefaultClient, base+"/pipelines?q=checkout")
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		body = waitPage(t, http.DefaultClient, base+"/pipelines?q=checkout")
		return strings.Contains(body, a+"/checkout"), nil
	}, "the anonymous reader sees A's strategy")
	assert.NotContains(t, body, b)
	resp, err := http.Get(base + "/pipelines/" + b + "/checkout")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// waitAllowed waits until the API server's authorizer lets user in groups do attrs: a RoleBinding
// just created takes a moment to reach it, and the UI remembers a refusal for 30 s.
func waitAllowed(t *testing.T, user string, groups []string, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		review, err := env.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(),
			&authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attrs}},
			metav1.CreateOptions{})
		return err == nil && review.Status.Allowed, err
	}, user+" may "+attrs.Verb+" "+attrs.Resource)
}
