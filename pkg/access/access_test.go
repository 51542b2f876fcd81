package access

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
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

var (
	alice = Person{User: "alice", Groups: []string{"team-a", "dev"}}
	bob   = Person{User: "bob", Groups: []string{"team-b"}}
)

// rbacByGroup allows a request in namespace ns to anyone in group ns, as a RoleBinding of the
// group in each namespace would.
func rbacByGroup(s authorizationv1.SubjectAccessReviewSpec) bool {
	return slices.Contains(s.Groups, s.ResourceAttributes.Namespace)
}

func TestAPersonIsAskedWithTheirGroupsExtrasAndSystemAuthenticated(t *testing.T) {
	c, asked := reviewsAllowing(rbacByGroup)
	r := &Reviewer{Reviews: c.AuthorizationV1().SubjectAccessReviews()}
	withExtra := Person{User: "carol", Groups: []string{"team-a"}, Extra: map[string][]string{"scopes": {"b", "a"}}}
	ok, err := r.AllowedPerson(context.Background(), withExtra, Request{Verb: "list", Group: "gating.sluice.dev", Resource: "gates", Namespace: "team-a"})
	require.NoError(t, err)
	assert.True(t, ok)
	require.Len(t, *asked, 1)
	assert.Equal(t, "carol", (*asked)[0].User)
	assert.ElementsMatch(t, []string{"team-a", "system:authenticated"}, (*asked)[0].Groups)
	assert.Equal(t, authorizationv1.ExtraValue{"b", "a"}, (*asked)[0].Extra["scopes"])

	ok, err = r.AllowedPerson(context.Background(), Anonymous, Request{Verb: "list", Resource: "gates", Namespace: "team-a"})
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, []string{"system:unauthenticated"}, (*asked)[1].Groups, "the anonymous identity is not authenticated")
}

func TestAnswersAreKeptPerPerson(t *testing.T) {
	c, asked := reviewsAllowing(rbacByGroup)
	r := &Reviewer{Reviews: c.AuthorizationV1().SubjectAccessReviews()}
	inA := Request{Verb: "list", Resource: "promotionstrategies", Namespace: "team-a"}
	for range 2 {
		ok, err := r.AllowedPerson(context.Background(), alice, inA)
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = r.AllowedPerson(context.Background(), bob, inA)
		require.NoError(t, err)
		assert.False(t, ok, "alice's answer is never bob's")
	}
	assert.Len(t, *asked, 2, "each person asked once, then remembered")
	// The same user with other groups is another person to RBAC.
	ok, err := r.AllowedPerson(context.Background(), Person{User: "alice", Groups: []string{"dev"}}, inA)
	require.NoError(t, err)
	assert.False(t, ok)
	// Groups in another order are the same person.
	_, err = r.AllowedPerson(context.Background(), Person{User: "alice", Groups: []string{"dev", "team-a"}}, inA)
	require.NoError(t, err)
	assert.Len(t, *asked, 3)
}

func TestAPersonsAnswerExpires(t *testing.T) {
	c, asked := reviewsAllowing(rbacByGroup)
	clock := clocktesting.NewFakePassiveClock(time.Now())
	r := &Reviewer{Reviews: c.AuthorizationV1().SubjectAccessReviews(), TTL: 10 * time.Second, Clock: clock}
	inA := Request{Verb: "list", Resource: "gates", Namespace: "team-a"}
	_, err := r.AllowedPerson(context.Background(), alice, inA)
	require.NoError(t, err)
	clock.SetTime(clock.Now().Add(9 * time.Second))
	_, err = r.AllowedPerson(context.Background(), alice, inA)
	require.NoError(t, err)
	assert.Len(t, *asked, 1)
	clock.SetTime(clock.Now().Add(2 * time.Second))
	_, err = r.AllowedPerson(context.Background(), alice, inA)
	require.NoError(t, err)
	assert.Len(t, *asked, 2, "asked again once the TTL passed")
}

func TestTheLeastRecentlyUsedAnswerGoesFirst(t *testing.T) {
	c, asked := reviewsAllowing(rbacByGroup)
	r := &Reviewer{Reviews: c.AuthorizationV1().SubjectAccessReviews(), MaxEntries: 3}
	in := func(ns string) Request { return Request{Verb: "list", Resource: "gates", Namespace: ns} }
	for _, ns := range []string{"a", "b", "c"} {
		_, err := r.AllowedPerson(context.Background(), alice, in(ns))
		require.NoError(t, err)
	}
	_, err := r.AllowedPerson(context.Background(), alice, in("a")) // a is used again: b is now the oldest
	require.NoError(t, err)
	_, err = r.AllowedPerson(context.Background(), bob, in("d"))
	require.NoError(t, err)
	assert.Equal(t, 3, r.Size())
	before := len(*asked)
	_, err = r.AllowedPerson(context.Background(), alice, in("a"))
	require.NoError(t, err)
	assert.Len(t, *asked, before, "a was kept")
	_, err = r.AllowedPerson(context.Background(), alice, in("b"))
	require.NoError(t, err)
	assert.Len(t, *asked, before+1, "b was the least recently used, and went")
}

func TestAsPersonAsksWithASelfSubjectAccessReviewThroughTheirClient(t *testing.T) {
	var asked []string
	c := fake.NewClientset()
	c.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		review.Status.Allowed = review.Spec.ResourceAttributes.Namespace == "team-a"
		return true, review, nil
	})
	r := &Reviewer{AsPerson: func(p Person) (authorizationclient.SelfSubjectAccessReviewInterface, error) {
		asked = append(asked, p.User)
		return c.AuthorizationV1().SelfSubjectAccessReviews(), nil
	}}
	ok, err := r.AllowedPerson(context.Background(), alice, Request{Verb: "update", Group: "gating.sluice.dev", Resource: "gates", Namespace: "team-a", Name: "prod"})
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = r.AllowedPerson(context.Background(), alice, Request{Verb: "update", Group: "gating.sluice.dev", Resource: "gates", Namespace: "team-b", Name: "prod"})
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, []string{"alice", "alice", "alice"}, asked, "every review through alice's own client; the name asked only when denied")
}
