package setup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

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
