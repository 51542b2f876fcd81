package rollbackhold

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/api/generated/clientset/versioned/fake"
	rollbackinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/rollback/v1alpha1"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/crds"
	"github.com/sluicehq/sluice/pkg/promotion"
	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
)

const bad = "badbadbadbadbadbadbadbadbadbadbadbadbadb"

func revert(name string, phase rollbackv1alpha1.RevertPhase) *rollbackv1alpha1.RevertCommit {
	return &rollbackv1alpha1.RevertCommit{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
		Spec:       rollbackv1alpha1.RevertCommitSpec{PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: "app"}, ActiveBranch: "prod"},
		Status:     rollbackv1alpha1.RevertCommitStatus{Phase: phase, BadDrySHA: bad},
	}
}

func TestHeldDrySHA(t *testing.T) {
	for phase, holds := range map[rollbackv1alpha1.RevertPhase]bool{
		"": true, rollbackv1alpha1.RevertPending: true, rollbackv1alpha1.RevertOpen: true,
		rollbackv1alpha1.RevertMerged: true, rollbackv1alpha1.RevertFailed: false,
	} {
		got := HeldDrySHA(revert("r", phase))
		assert.Equal(t, holds, got == bad, "phase %q", phase)
	}
	lifted := revert("r", rollbackv1alpha1.RevertMerged)
	lifted.Annotations = map[string]string{rollbackv1alpha1.LiftHoldAnnotation: "fixed by hand"}
	assert.Empty(t, HeldDrySHA(lifted), "the annotation lifts the hold")
	deleting := revert("r", rollbackv1alpha1.RevertMerged)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	assert.Empty(t, HeldDrySHA(deleting), "deleting lifts the hold")
	pending := revert("r", rollbackv1alpha1.RevertPending)
	pending.Status.BadDrySHA, pending.Spec.BadDrySHA = "", bad
	assert.Equal(t, bad, HeldDrySHA(pending), "before the rollback-controller writes status, the spec's bad SHA holds")
	pending.Spec.BadDrySHA = ""
	assert.Empty(t, HeldDrySHA(pending), "nothing known to hold")
}

// Without the RevertCommit CRD nothing is held; a CRD installed later is noticed, and the
// RevertCommits it serves are read.
func TestHoldsFollowTheCRD(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	meta := metadatafake.NewSimpleMetadataClient(scheme)
	client := fake.NewSimpleClientset()
	kinds, err := crdwatch.NewKinds(meta)
	require.NoError(t, err)
	inf := rollbackinformers.NewRevertCommitInformer(client, "", 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	kinds.Add(crds.RevertCommits, inf)
	h := New(kinds, rollbacklisters.NewRevertCommitLister(inf.GetIndexer()))
	_, err = h.For("team", "app", "prod")
	require.Error(t, err, "before the CRDs are listed nothing is known, and nothing may be promoted")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = kinds.Run(ctx) }()
	waitFor(t, kinds.HasSynced)
	holds, err := h.For("team", "app", "prod")
	require.NoError(t, err)
	assert.Empty(t, holds, "no CRD, no holds")

	_, err = client.RollbackV1alpha1().RevertCommits("team").Create(ctx, revert("prod-bad", rollbackv1alpha1.RevertMerged), metav1.CreateOptions{})
	require.NoError(t, err)
	crd := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "revertcommits.rollback.sluice.dev"}}
	_, err = meta.Resource(crdwatch.Resource).(metadatafake.MetadataClient).CreateFake(crd, metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor(t, func() bool { return kinds.Synced(crds.RevertCommits) })
	holds, err = h.For("team", "app", "prod")
	require.NoError(t, err)
	assert.Equal(t, []promotion.Hold{{RevertCommit: "team/prod-bad", DrySHA: bad}}, holds)
	holds, err = h.For("team", "app", "staging")
	require.NoError(t, err)
	assert.Empty(t, holds, "another environment is not held")
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }))
}
