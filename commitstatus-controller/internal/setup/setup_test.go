package setup

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
)

type keys []string

func (k *keys) Enqueue(key string) { *k = append(*k, key) }

var resourceVersion int

// provider is a new version of the ScmProvider: each write, status included, has its own
// resourceVersion.
func provider(generation int64, annotations map[string]string, ready bool) *scmv1alpha1.ScmProvider {
	resourceVersion++
	p := &scmv1alpha1.ScmProvider{ObjectMeta: metav1.ObjectMeta{
		Namespace: "team", Name: "github", Generation: generation, Annotations: annotations,
		ResourceVersion: strconv.Itoa(resourceVersion),
	}}
	if ready {
		p.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
	}
	return p
}

// Status writes by other controllers must not fan out to every CommitStatus; spec and annotation
// changes must.
func TestReferencedObjectsEnqueueOnlyOnSpecOrAnnotationChanges(t *testing.T) {
	var enqueued keys
	var updated, deleted []string
	h := onSpecChange(&enqueued,
		func(p *scmv1alpha1.ScmProvider) []string { return []string{"team/status-of-" + p.Name} },
		func(p *scmv1alpha1.ScmProvider) { updated = append(updated, p.Name) },
		func(p *scmv1alpha1.ScmProvider) { deleted = append(deleted, p.Name) },
	)

	h.OnUpdate(provider(1, nil, false), provider(1, nil, true))
	assert.Empty(t, enqueued, "a status-only write")

	h.OnUpdate(provider(1, nil, false), provider(2, nil, false))
	assert.Equal(t, keys{"team/status-of-github"}, enqueued, "a spec change")

	h.OnUpdate(provider(2, nil, false), provider(2, map[string]string{"touched": "now"}, false))
	assert.Len(t, enqueued, 2, "an annotation, such as a touch or a suspend reason")
	assert.Equal(t, []string{"github", "github"}, updated)

	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "team/github", Obj: provider(2, nil, false)})
	assert.Len(t, enqueued, 3)
	assert.Equal(t, []string{"github"}, deleted)

	h.OnAdd(provider(1, nil, false), false)
	assert.Len(t, enqueued, 4)
}

func TestConfigRejectsUnusableDurations(t *testing.T) {
	c := Defaults()
	assert.NoError(t, c.Validate())
	c.RecheckInterval = 0
	assert.ErrorContains(t, c.Validate(), "--stalled-recheck-interval")
}
