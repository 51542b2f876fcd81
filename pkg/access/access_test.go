package access

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// reviewsAllowing answers reviews as RBAC would with allow, and records what it was asked.
func reviewsAllowing(allow func(authorizationv1.SubjectAccessReviewSpec) bool) (*fake.Clientset, *[]authorizationv1.SubjectAccessReviewSpec) {
	var asked []authorizationv1.SubjectAccessReviewSpec
	c := fake.NewClientset()
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		asked = append(asked, review.Spec)
		review.Status.Allowed = allow(review.Spec)
		return true, review, nil
	})
	return c, &asked
}

var teamA = ServiceAccount{Namespace: "team-a", Name: "default"}

func TestAllowedAsksAsTheServiceAccountWithItsGroups(t *testing.T) {
	c, asked := reviewsAllowing(func(s authorizationv1.SubjectAccessReviewSpec) bool {
		return s.ResourceAttributes.Namespace == "team-a"
	})
	r := &Reviewer{Reviews: c.AuthorizationV1().SubjectAccessReviews()}
	ok, err := r.Allowed(context.Background(), teamA, Request{Verb: "get", Resource: "configmaps", Namespace: "team-a", Name: "x"})
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = r.Allowed(context.Background(), teamA, Request{Verb: "get", Resource: "configmaps", Namespace: "kube-system", Name: "x"})
	require.NoError(t, err)
	assert.False(t, ok)
	require.NotEmpty(t, *asked)
	first := (*asked)[0]
	assert.Equal(t, "system:serviceaccount:team-a:default", first.User)
	assert.ElementsMatch(t, []string{"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"}, first.Groups)
	// Allowed on every object: the name was not asked. Denied: it was, for resourceNames.
	assert.Empty(t, first.ResourceAttributes.Name)
	assert.Len(t, *asked, 3)
	assert.Equal(t, "x", (*asked)[2].ResourceAttributes.Name)
}

func TestAnswersAreRememberedForTheTTLOnly(t *testing.T) {
	allow := true
	c, asked := reviewsAllowing(func(authorizationv1.SubjectAccessReviewSpec) bool { return allow })
	clock := clocktesting.NewFakePassiveClock(time.Now())
	r := &Reviewer{Reviews: c.AuthorizationV1().SubjectAccessReviews(), TTL: time.Minute, Clock: clock}
	req := Request{Verb: "list", Group: "apps", Resource: "deployments", Namespace: "team-a"}
	for range 3 {
		ok, err := r.Allowed(context.Background(), teamA, req)
		require.NoError(t, err)
		assert.True(t, ok)
	}
	assert.Len(t, *asked, 1)
	allow = false
	clock.SetTime(clock.Now().Add(2 * time.Minute))
	ok, err := r.Allowed(context.Background(), teamA, req)
	require.NoError(t, err)
	assert.False(t, ok, "a revoked right is seen once the answer expired")
	assert.Len(t, *asked, 2)
}

func TestMemoryIsBounded(t *testing.T) {
	c, _ := reviewsAllowing(func(authorizationv1.SubjectAccessReviewSpec) bool { return true })
	r := &Reviewer{Reviews: c.AuthorizationV1().SubjectAccessReviews(), MaxEntries: 10}
	for i := range 100 {
		_, err := r.Allowed(context.Background(), ServiceAccount{Namespace: "ns", Name: string(rune('a' + i%26))},
			Request{Verb: "get", Resource: "pods", Namespace: "ns", Name: string(rune('a' + i))})
		require.NoError(t, err)
		assert.LessOrEqual(t, r.Size(), 10)
	}
}
