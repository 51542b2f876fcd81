package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/charts"
)

// The chart's ValidatingAdmissionPolicy: a user whom RBAC lets write CommitStatuses cannot create
// an imported one (a forged pass) nor edit one the controller imported; the controller's
// ServiceAccount can, and so can another shard's that import.policyWriters lists; CommitStatuses
// without the label are untouched.
func TestImportedCommitStatusesAreReadOnlyToUsers(t *testing.T) {
	testenv.SkipIfShort(t)
	ctx := context.Background()
	const release, releaseNS = "commitstatus-controller", "sluice-system"
	const otherShard = "commitstatus-shard-b"
	charts.InstallForTest(t, env, release, releaseNS, "commitstatus-controller", "import.policyWriters={"+releaseNS+"/"+otherShard+"}")
	ns := newNamespace(t)
	// alice may do anything with CommitStatuses in ns, as a team's CI account might.
	_, err := env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "commitstatuses"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"commitstatus.sluice.dev"}, Resources: []string{"commitstatuses"}, Verbs: []string{"*"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, roleBinding("alice"), metav1.CreateOptions{})
	require.NoError(t, err)
	as := func(cfg *rest.Config) sluice.Interface {
		c, err := sluice.NewForConfig(cfg)
		require.NoError(t, err)
		return c
	}
	aliceCfg := rest.CopyConfig(env.Config)
	aliceCfg.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"system:authenticated"}}
	alice, controller := as(aliceCfg), as(env.Impersonate(releaseNS, release))

	forged := newCommitStatus(ns, "forged", "app", sha1, commitstatusv1alpha1.CommitStatusSuccess)
	forged.Labels[commitstatusv1alpha1.ImportedLabel] = "true"
	// RBAC and the policy both take effect a moment after they are created: until the RoleBinding
	// is seen, RBAC refuses alice everything, which says nothing of the policy. So first wait
	// until RBAC lets her write a CommitStatus of her own, then for the policy's refusal.
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	require.NoError(t, testenv.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		_, err := alice.CommitstatusV1alpha1().CommitStatuses(ns).Create(ctx, newCommitStatus(ns, "rbac-probe", "app", sha1, commitstatusv1alpha1.CommitStatusSuccess), dryRun)
		return err == nil, nil
	}), "RBAC never let alice write a CommitStatus of her own")
	var refused error
	err = testenv.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		_, refused = alice.CommitstatusV1alpha1().CommitStatuses(ns).Create(ctx, forged.DeepCopy(), dryRun)
		return refused != nil && strings.Contains(refused.Error(), "only the commitstatus-controller writes it"), nil
	})
	require.NoError(t, err, "the policy never refused a forged import; the last answer: %v", refused)
	assert.True(t, apierrors.IsForbidden(refused) || apierrors.IsInvalid(refused), "%v", refused)

	_, err = alice.CommitstatusV1alpha1().CommitStatuses(ns).Create(ctx, newCommitStatus(ns, "own", "app", sha1, commitstatusv1alpha1.CommitStatusSuccess), metav1.CreateOptions{})
	require.NoError(t, err, "a CommitStatus of her own is hers to write")

	imported, err := controller.CommitstatusV1alpha1().CommitStatuses(ns).Create(ctx, forged, metav1.CreateOptions{})
	require.NoError(t, err, "the controller's ServiceAccount writes imported objects")
	// Another shard's controller, listed in policyWriters, takes over an import (a strategy moved
	// to its shard), under the same RBAC as alice: the policy alone tells them apart.
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, serviceAccountBinding(releaseNS, otherShard), metav1.CreateOptions{})
	require.NoError(t, err)
	imported.Labels["shard"] = "b"
	imported, err = as(env.Impersonate(releaseNS, otherShard)).CommitstatusV1alpha1().CommitStatuses(ns).Update(ctx, imported, metav1.UpdateOptions{})
	require.NoError(t, err, "a shard that policyWriters lists writes imported objects")

	imported.Spec.Phase = commitstatusv1alpha1.CommitStatusFailure
	_, err = alice.CommitstatusV1alpha1().CommitStatuses(ns).Update(ctx, imported, metav1.UpdateOptions{})
	require.Error(t, err, "nor may she edit one")
	delete(imported.Labels, commitstatusv1alpha1.ImportedLabel)
	_, err = alice.CommitstatusV1alpha1().CommitStatuses(ns).Update(ctx, imported, metav1.UpdateOptions{})
	require.Error(t, err, "nor take the label off to edit it")
}

func serviceAccountBinding(namespace, name string) *rbacv1.RoleBinding {
	b := roleBinding(name)
	b.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}}
	return b
}

func roleBinding(user string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-commitstatuses"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "commitstatuses"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: "rbac.authorization.k8s.io", Name: user}},
	}
}
