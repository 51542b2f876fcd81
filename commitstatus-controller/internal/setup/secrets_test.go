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
	rt "github.com/sluicehq/sluice/commitstatus-controller/internal/readiness/readinesstest"
)

func TestReferrersOfASecret(t *testing.T) {
	providers := cache.NewIndexer(cache.MetaNamespaceKeyFunc, secretIndexers)
	repos := cache.NewIndexer(cache.MetaNamespaceKeyFunc, secretIndexers)
	require.NoError(t, providers.Add(rt.GitHubProvider(func(p *scmv1alpha1.ScmProvider) {
		p.Spec.CABundle = &scmv1alpha1.CABundleReference{Kind: "Secret", Name: "corp-ca"}
	})))
	require.NoError(t, providers.Add(rt.GitHubProvider(func(p *scmv1alpha1.ScmProvider) {
		p.Name = "ghes"
		p.Spec.CABundle = &scmv1alpha1.CABundleReference{Kind: "ConfigMap", Name: "corp-ca"}
	})))
	require.NoError(t, providers.Add(rt.GitHubProvider(func(p *scmv1alpha1.ScmProvider) {
		p.Name, p.Spec.Type, p.Spec.SecretRef = "plain", scmv1alpha1.ScmProviderGit, nil
	})))
	require.NoError(t, repos.Add(rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthToken, "https://github.com/acme/app.git"))))
	require.NoError(t, repos.Add(rt.Repository(func(r *scmv1alpha1.ScmRepository) { r.Name = "public" })))

	secret := func(namespace, name string) metav1.Object {
		return &metav1.ObjectMeta{Namespace: namespace, Name: name}
	}
	assert.ElementsMatch(t, []string{"team/github", "team/ghes"}, referrers(providers, secret(rt.NS, "github-token")))
	assert.Equal(t, []string{"team/github"}, referrers(providers, secret(rt.NS, "corp-ca")), "a ConfigMap of the same name is not a Secret")
	assert.Equal(t, []string{"team/app"}, referrers(repos, secret(rt.NS, "git-creds")))
	assert.Empty(t, referrers(repos, secret("other", "git-creds")), "references are local to the namespace")
	assert.Empty(t, referrers(providers, secret(rt.NS, "unrelated")))
}

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
