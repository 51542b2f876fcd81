package integration

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/gate-controller/gatecli"
	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// fetch writes a GitRepository's status.artifact as source-controller does when it fetches a
// new commit: no Flux controller runs here, and a held Kustomization's source goes on fetching.
func fetch(t *testing.T, repo object, revision string) {
	t.Helper()
	_, err := updateStatus(repo, func(u *unstructured.Unstructured) {
		require.NoError(t, unstructured.SetNestedMap(u.Object, map[string]any{
			"revision":       revision,
			"digest":         "sha256:" + fmt.Sprintf("%x", sha256.Sum256([]byte(revision))),
			"path":           "gitrepository/" + repo.namespace + "/" + repo.name + "/" + revision + ".tar.gz",
			"url":            "http://source-controller/gitrepository/" + repo.namespace + "/" + repo.name + ".tar.gz",
			"lastUpdateTime": time.Now().UTC().Format(time.RFC3339),
		}, "status", "artifact"))
	})
	require.NoError(t, err)
}

func updateStatus(o object, mutate func(*unstructured.Unstructured)) (*unstructured.Unstructured, error) {
	ctx := context.Background()
	client := env.Dynamic.Resource(o.gvr).Namespace(o.namespace)
	for {
		u, err := client.Get(ctx, o.name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		mutate(u)
		updated, err := client.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: "source-controller"})
		if err == nil || !strings.Contains(err.Error(), "the object has been modified") {
			return updated, err
		}
	}
}

func approve(t *testing.T, ns, name, revision, by string) {
	t.Helper()
	updateGate(t, ns, name, func(g *gatingv1alpha1.Gate) {
		g.Spec.Approvals = append(g.Spec.Approvals, gatingv1alpha1.GateApproval{Revision: revision, By: by})
	})
}

func TestAGateApprovingRevisionsReleasesAKustomizationOnlyAtThem(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	r1 := "main@sha1:" + strings.Repeat("1", 40)
	r2 := "main@sha1:" + strings.Repeat("2", 40)
	r3 := "main@sha1:" + strings.Repeat("3", 40)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{Closed: true, Message: "infrastructure upgrades need sign-off"})
	waitGate(t, ns, "prod", wait, isClosed)
	// The source is not gated: it goes on fetching, and the Kustomization waits for approval.
	repo := createFlux(t, flux.GitRepositories, ns, "repo", nil, nil, "kubectl-create")
	fetch(t, repo, r1)
	ks := createFlux(t, flux.Kustomizations, ns, "infra", map[string]string{gate.GatesAnnotation: "prod"}, nil, "kubectl-create")

	u := waitObject(t, ks, wait, "held at r1, not approved yet", heldByController)
	assert.Contains(t, u.GetAnnotations()[suspend.Annotation], "infrastructure upgrades need sign-off")

	// r1 approved: released though the gate stays closed.
	approve(t, ns, "prod", r1, "alice")
	waitObject(t, ks, wait, "released at the approved r1", released)
	g := waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool { return len(g.Status.Approvals) == 1 && g.Status.Holding == 0 })
	assert.False(t, g.Status.Open, "an approval does not open the gate")
	assert.Equal(t, "alice", g.Status.Approvals[0].By)
	assert.NotNil(t, g.Status.Approvals[0].At, "when it was approved")
	assert.Equal(t, "main@sha1:111111111111", g.Status.Approved)

	// The source moves to r2, which nobody approved: held again, and told why.
	fetch(t, repo, r2)
	u = waitObject(t, ks, wait, "held again at r2", heldByController)
	reason := u.GetAnnotations()[suspend.Annotation]
	assert.Contains(t, reason, "it approves main@sha1:111111111111, not main@sha1:222222222222")

	// r2 approved: released.
	approve(t, ns, "prod", r2, "bob")
	waitObject(t, ks, wait, "released at the approved r2", released)

	// r3: held again.
	fetch(t, repo, r3)
	waitObject(t, ks, wait, "held again at r3", heldByController)
	g = waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool { return g.Status.Holding == 1 })
	assert.Equal(t, "main@sha1:111111111111, main@sha1:222222222222", g.Status.Approved)
}

func TestAnApprovalIsRefusedAtAdmissionUnlessItNamesOneFullRevision(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	for _, c := range []struct{ revision, says string }{
		{"abc1234", "written in full"},
		{"sha1:" + strings.Repeat("a", 12), "written in full"},
		{"r1, r2", "with no spaces or commas"},
		{"", "revision"},
		{"main@sha1:3549486", "written in full"},
		{"sha256:abcd", "written in full"},
		{"main@sha1:", "written in full"},
		{"main@" + strings.Repeat("a", 40), "revision must be one of"},
	} {
		g := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
			Spec: gatingv1alpha1.GateSpec{Approvals: []gatingv1alpha1.GateApproval{{Revision: c.revision}}}}
		_, err := env.Sluice.GatingV1alpha1().Gates(ns).Create(context.Background(), g, metav1.CreateOptions{})
		require.Error(t, err, "revision %q", c.revision)
		assert.Contains(t, err.Error(), c.says, "revision %q", c.revision)
	}
	for _, a := range []gatingv1alpha1.GateApproval{
		{Revision: "6.0.1"}, {Revision: strings.Repeat("a", 40)}, {Revision: "v1.2@sha256:" + strings.Repeat("c", 64)},
		{Revision: "main@sha1:" + strings.Repeat("b", 40)}, {Revision: "sha256:" + strings.Repeat("d", 64)},
	} {
		g := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "good-"},
			Spec: gatingv1alpha1.GateSpec{Approvals: []gatingv1alpha1.GateApproval{a}}}
		_, err := env.Sluice.GatingV1alpha1().Gates(ns).Create(context.Background(), g, metav1.CreateOptions{})
		assert.NoError(t, err, "revision %q", a.Revision)
	}
}

func TestPluginApprovesOneRevisionAndKubectlGetShowsIt(t *testing.T) {
	sharedController(t)
	t.Parallel()
	ns := newNamespace(t)
	r1 := "main@sha1:" + strings.Repeat("a", 40)
	createGate(t, ns, "prod", gatingv1alpha1.GateSpec{Closed: true, Message: "image updates need sign-off"})
	waitGate(t, ns, "prod", wait, isClosed)
	repo := createFlux(t, flux.GitRepositories, ns, "repo", nil, nil, "kubectl-create")
	fetch(t, repo, r1)
	ks := createFlux(t, flux.Kustomizations, ns, "apps", map[string]string{gate.GatesAnnotation: "prod"}, nil, "kubectl-create")
	waitObject(t, ks, wait, "held", heldByController)

	me, err := env.Kube.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	user := me.Status.UserInfo.Username
	require.NotEmpty(t, user)

	out, err := kubectlGate(t, ns, "approve", "prod", "--revision", r1, "--for", "24h", "-m", "CVE fix signed off")
	require.NoError(t, err, out)
	assert.Contains(t, out, "gate/prod approves "+r1+" (approved by "+user+") until ")
	assert.Contains(t, out, "the gate is closed (Manual): image updates need sign-off; it lets through main@sha1:aaaaaaaaaaaa")
	waitObject(t, ks, wait, "released at the approved revision", released)

	g := getGate(t, ns, "prod")
	require.Len(t, g.Spec.Approvals, 1)
	a := g.Spec.Approvals[0]
	assert.Equal(t, user, a.By, "the plugin records who approved")
	assert.Equal(t, "CVE fix signed off", a.Message)
	require.NotNil(t, a.At)
	require.NotNil(t, a.Until)
	assert.Equal(t, 24*time.Hour, a.Until.Sub(a.At.Time))

	// Approving the same revision again replaces its approval rather than adding one.
	out, err = kubectlGate(t, ns, "approve", "prod", "--revision", r1)
	require.NoError(t, err, out)
	g = waitGate(t, ns, "prod", wait, func(g *gatingv1alpha1.Gate) bool {
		return len(g.Status.Approvals) == 1 && g.Status.Approvals[0].Until == nil
	})
	assert.Len(t, g.Spec.Approvals, 1)

	kubectl, err := testenv.Tool("kubectl")
	require.NoError(t, err)
	cmd := exec.Command(kubectl, "get", "gate", "prod", "-n", ns)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	table, err := cmd.CombinedOutput()
	require.NoError(t, err, string(table))
	lines := strings.Split(strings.TrimSpace(string(table)), "\n")
	require.Len(t, lines, 2, string(table))
	assert.Contains(t, lines[0], "APPROVED")
	assert.Contains(t, lines[1], "main@sha1:aaaaaaaaaaaa")

	// A short digest after the ref is refused by the API server, with why, and nothing is added.
	out, err = kubectlGate(t, ns, "approve", "prod", "--revision", "main@sha1:3549486")
	require.Error(t, err, out)
	assert.Contains(t, out, "written in full")
	assert.Len(t, getGate(t, ns, "prod").Spec.Approvals, 1)

	out, err = kubectlGate(t, ns, "approve", "nonexistent", "--revision", r1)
	require.Error(t, err)
	assert.Equal(t, gatecli.ExitFailed, gatecli.ExitCode(err))
	assert.Contains(t, out, "gate "+ns+"/nonexistent not found")
}
