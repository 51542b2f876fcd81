package scmgit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/scmgit"
)

// opener serves the given ScmRepositories and ScmProviders from listers, and Secrets from a fake
// clientset.
func opener(t *testing.T, objs []any, secrets ...*corev1.Secret) (*scmgit.Opener, *kubefake.Clientset) {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		require.NoError(t, idx.Add(o))
	}
	kube := kubefake.NewClientset()
	for _, s := range secrets {
		_, err := kube.CoreV1().Secrets(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	c, err := git.NewCache(t.TempDir(), nil)
	require.NoError(t, err)
	return &scmgit.Opener{Kube: kube, Repos: scmlisters.NewScmRepositoryLister(idx), Providers: scmlisters.NewScmProviderLister(idx), Cache: c}, kube
}

func repo(auth *scmv1alpha1.GitAuth) *scmv1alpha1.ScmRepository {
	return &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "apps", ResourceVersion: "1"},
		Spec:       scmv1alpha1.ScmRepositorySpec{URL: "https://git.example.com/acme/app.git", ProviderRef: scmv1alpha1.LocalObjectReference{Name: "git"}, Auth: auth},
	}
}

var provider = &scmv1alpha1.ScmProvider{
	ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: "apps", ResourceVersion: "1"},
	Spec:       scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGit},
}

var basic = &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthBasic, SecretRef: scmv1alpha1.LocalObjectReference{Name: "creds"}}

func TestOpenSaysWhatToFix(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objs    []any
		secrets []*corev1.Secret
		want    string
	}{
		{"no repository", nil, nil, `ScmRepository "app" does not exist in namespace "apps"`},
		{"no provider", []any{repo(nil)}, nil, `ScmProvider "git", named by ScmRepository "app", does not exist`},
		{"no secret", []any{repo(basic), provider}, nil, `Secret "creds", named by ScmRepository "app", does not exist in namespace "apps"`},
		{"secret without the keys", []any{repo(basic), provider}, []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "apps"}, Data: map[string][]byte{"username": []byte("u")}}}, "password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := opener(t, tc.objs, tc.secrets...)
			_, err := o.Open(context.Background(), "apps", "app")
			require.Error(t, err)
			assert.True(t, scmgit.IsConfigError(err), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestOpenKeepsTheHandleWhileNothingChanged(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "apps"}, Data: map[string][]byte{"username": []byte("u"), "password": []byte("s3cret")}}
	o, kube := opener(t, []any{repo(basic), provider}, secret)
	first, err := o.Open(context.Background(), "apps", "app")
	require.NoError(t, err)
	again, err := o.Open(context.Background(), "apps", "app")
	require.NoError(t, err)
	assert.Same(t, first, again)

	secret.Data["password"] = []byte("rotated")
	secret.ResourceVersion = "2"
	_, err = kube.CoreV1().Secrets("apps").Update(context.Background(), secret, metav1.UpdateOptions{})
	require.NoError(t, err)
	rotated, err := o.Open(context.Background(), "apps", "app")
	require.NoError(t, err)
	assert.NotSame(t, first, rotated, "a changed Secret gives a new handle with the new credentials")
	assert.NotContains(t, rotated.URL(), "s3cret")
}
