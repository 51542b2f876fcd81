package setup

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

// allowVerbs answers SelfSubjectAccessReviews on Secrets: allowed for the given verbs only.
func allowVerbs(t *testing.T, verbs ...string) *kubefake.Clientset {
	kube := kubefake.NewClientset()
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		attrs := review.Spec.ResourceAttributes
		assert.Equal(t, "secrets", attrs.Resource)
		assert.Equal(t, "team", attrs.Namespace, "asked for the watch scope")
		for _, v := range verbs {
			review.Status.Allowed = review.Status.Allowed || v == attrs.Verb
		}
		return true, review, nil
	})
	return kube
}

func TestSecretsAreWatchedOnlyWithListAndWatch(t *testing.T) {
	watched, err := canWatchSecrets(allowVerbs(t, "list", "watch"), "team")
	require.NoError(t, err)
	assert.True(t, watched)

	watched, err = canWatchSecrets(allowVerbs(t, "list"), "team")
	require.NoError(t, err)
	assert.False(t, watched, "list without watch")

	watched, err = canWatchSecrets(allowVerbs(t), "team")
	require.NoError(t, err)
	assert.False(t, watched, "get only, the chart's default")

	failing := kubefake.NewClientset()
	failing.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("apiserver unavailable")
	})
	watched, err = canWatchSecrets(failing, "team")
	assert.Error(t, err)
	assert.False(t, watched)
}

// The Secret watch keeps names only: a last-applied-configuration annotation would hold the
// Secret's data.
func TestSecretWatchKeepsNamesOnly(t *testing.T) {
	in := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "team", Name: "github-token", UID: "u", ResourceVersion: "9",
		Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"token":"c2VjcmV0"}}`},
		Labels:        map[string]string{"app": "x"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}}
	out, err := nameOnly(in)
	require.NoError(t, err)
	m := out.(*metav1.PartialObjectMetadata)
	assert.Equal(t, metav1.ObjectMeta{Namespace: "team", Name: "github-token", UID: "u", ResourceVersion: "9"}, m.ObjectMeta)
}

// ScmRepositories read their ScmProvider's Ready condition, so they come back when it changes,
// and not for writes that change nothing they read.
func TestRepositoriesFollowTheirProvidersVerdict(t *testing.T) {
	repos := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byProvider: func(obj any) ([]string, error) {
		r := obj.(*scmv1alpha1.ScmRepository)
		return []string{r.Namespace + "/" + r.Spec.ProviderRef.Name}, nil
	}})
	for _, name := range []string{"app", "lib"} {
		require.NoError(t, repos.Add(&scmv1alpha1.ScmRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			Spec:       scmv1alpha1.ScmRepositorySpec{ProviderRef: scmv1alpha1.LocalObjectReference{Name: "github"}},
		}))
	}
	var enqueued keys
	h := onProviderVerdict(&enqueued, repos)

	h.OnUpdate(provider(1, nil, false), provider(1, nil, false))
	assert.Empty(t, enqueued, "nothing a repository reads changed")

	h.OnUpdate(provider(1, nil, false), provider(1, nil, true))
	assert.ElementsMatch(t, keys{"team/app", "team/lib"}, enqueued, "the provider's Ready condition changed")

	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "team/github", Obj: provider(1, nil, true)})
	assert.Len(t, enqueued, 4, "a deleted provider")
}
