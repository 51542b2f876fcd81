package apply_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

// reviewsAllowing answers SelfSubjectAccessReviews by allowed (keyed "verb resource namespace
// name") and records each question.
func reviewsAllowing(allowed map[string]bool, asked *[]string) *fake.Clientset {
	client := fake.NewClientset()
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		at := review.Spec.ResourceAttributes
		key := at.Verb + " " + at.Resource + " " + at.Namespace + " " + at.Name
		*asked = append(*asked, key)
		review.Status.Allowed = allowed[key]
		return true, review, nil
	})
	return client
}

func TestCheckAsksOncePerResourceThenPerNameAndNamesTheFirstMissingRight(t *testing.T) {
	ctx := context.Background()
	a := &apply.Applier{Mapper: newMapper(nil)}
	cm := func(ns, name string) manifest.Ref {
		return manifest.Ref{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: name}
	}
	widget := manifest.Ref{Group: "example.com", Version: "v1", Kind: "Widget", Namespace: "apps", Name: "w"}
	crds := []manifest.CRDNames{{Group: "example.com", Kind: "Widget", Plural: "widgets", Namespaced: true}}

	var asked []string
	client := reviewsAllowing(map[string]bool{"create configmaps apps ": true, "create widgets apps ": true, "create configmaps other only-this": true}, &asked)
	rv := apply.Reviewer{Reviews: client.AuthorizationV1().SelfSubjectAccessReviews(), User: "ServiceAccount apps/tenant"}
	needs := apply.Needs([]manifest.Ref{cm("apps", "a"), cm("apps", "b"), widget, cm("other", "only-this")}, "create")
	require.NoError(t, a.Check(ctx, rv, needs, crds))
	assert.Equal(t, []string{"create configmaps apps ", "create widgets apps ", "create configmaps other ", "create configmaps other only-this"}, asked,
		"one question per resource and namespace; a name only when the resource-wide rule is missing; a kind of the plan's CRD by its plural")

	asked = nil
	err := a.Check(ctx, rv, apply.Needs([]manifest.Ref{cm("apps", "a"), cm("kube-system", "planted")}, "create"), nil)
	var denied *apply.DeniedError
	require.ErrorAs(t, err, &denied)
	assert.Equal(t, "create", denied.Verb)
	assert.Equal(t, cm("kube-system", "planted"), denied.Object)
	assert.Contains(t, err.Error(), "ServiceAccount apps/tenant may not create ConfigMap/kube-system/planted (configmaps in namespace kube-system)")
}

// An object taken over from someone else is given back with its content from before, not
// deleted.
func TestDeleteGivesBackAnAdoptedObjectAsItWas(t *testing.T) {
	ctx := context.Background()
	adopted := configMap("settings", owner)
	adopted.SetAnnotations(map[string]string{apply.PreviousAnnotation: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"apps","labels":{"team":"a"}},"data":{"v":"by hand"}}`})
	_ = unstructured.SetNestedField(adopted.Object, "from the release", "data", "v")
	dyn := newDynamic(adopted)
	a := &apply.Applier{Dynamic: dyn, Mapper: newMapper(nil), FieldManager: "sluice-test"}
	deleted, err := a.Delete(ctx, []manifest.Ref{manifest.RefOf(adopted)}, owner)
	require.NoError(t, err)
	assert.Equal(t, []manifest.Ref{manifest.RefOf(adopted)}, deleted, "it leaves the release")
	live, err := a.Get(ctx, manifest.RefOf(adopted))
	require.NoError(t, err)
	require.NotNil(t, live, "not deleted")
	v, _, _ := unstructured.NestedString(live.Object, "data", "v")
	assert.Equal(t, "by hand", v)
	assert.Equal(t, map[string]string{"team": "a"}, live.GetLabels(), "without the release's labels")
	assert.NotContains(t, live.GetAnnotations(), apply.PreviousAnnotation)
}
