package resolve

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"

	_ "github.com/sluicehq/sluice/pkg/scm/builtin"
)

const ns = "team"

type fixture struct {
	kube     *kubefake.Clientset
	resolver *Resolver
	clock    *clocktesting.FakeClock
	builds   int
}

func newFixture(t *testing.T, provider *scmv1alpha1.ScmProvider, objects ...runtime.Object) *fixture {
	t.Helper()
	repos := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	providers := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, repos.Add(&scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec:       scmv1alpha1.ScmRepositorySpec{ProviderRef: scmv1alpha1.LocalObjectReference{Name: provider.Name}, Owner: "acme", Name: "app"},
	}))
	require.NoError(t, providers.Add(provider))
	f := &fixture{kube: kubefake.NewClientset(objects...), clock: clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))}
	f.resolver = &Resolver{
		Repositories: scmlisters.NewScmRepositoryLister(repos),
		Providers:    scmlisters.NewScmProviderLister(providers),
		Kube:         f.kube,
		Limiters:     ratelimit.NewRegistry(),
		Clock:        f.clock,
		New: func(name string, cfg scm.Config) (scm.Provider, error) {
			f.builds++
			return scm.New(name, cfg)
		},
	}
	return f
}

func (f *fixture) resolve(t *testing.T) (*Target, *Error) {
	t.Helper()
	return f.resolver.Resolve(context.Background(), &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "health"},
		Spec:       commitstatusv1alpha1.CommitStatusSpec{RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: "app"}},
	})
}

func gitea(mutate func(*scmv1alpha1.ScmProvider)) *scmv1alpha1.ScmProvider {
	p := &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gitea", UID: "u1", Generation: 1},
		Spec: scmv1alpha1.ScmProviderSpec{
			Type: scmv1alpha1.ScmProviderGitea, BaseURL: "https://gitea.example.com",
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "token"},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func tokenSecret() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "token", ResourceVersion: "7"},
		Data: map[string][]byte{"token": []byte("gitea-token-0123456789")}}
}

func TestTargetNamesTheEndpointNotTheCredentials(t *testing.T) {
	f := newFixture(t, gitea(nil), tokenSecret())
	target, err := f.resolve(t)
	require.Nil(t, err)
	assert.Equal(t, "gitea https://gitea.example.com", target.Endpoint)
	assert.Equal(t, scm.Repository{Owner: "acme", Name: "app"}, target.Repository)
	assert.Equal(t, "team/gitea", target.ProviderKey)
	assert.Equal(t, "secret token@7", target.CredentialsVersion)
	assert.False(t, target.InCluster)
	assert.NotContains(t, target.Endpoint+target.CredentialsVersion, "gitea-token-0123456789")
}

func TestCABundleWithoutTheKeyIsReportedByName(t *testing.T) {
	p := gitea(func(p *scmv1alpha1.ScmProvider) {
		p.Spec.CABundle = &scmv1alpha1.CABundleReference{Kind: "ConfigMap", Name: "ca"}
	})
	f := newFixture(t, p, tokenSecret(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ca"}, Data: map[string]string{"bundle.pem": "x"}})
	_, err := f.resolve(t)
	require.NotNil(t, err)
	assert.Equal(t, ReasonCABundleInvalid, err.Reason)
	assert.Contains(t, err.Message, `ConfigMap "ca" has no key ca.crt`)
	assert.True(t, err.Unwatched)
}

func TestAnAPIServerHiccupKeepsTheLastGoodClient(t *testing.T) {
	f := newFixture(t, gitea(nil), tokenSecret())
	first, err := f.resolve(t)
	require.Nil(t, err)

	f.kube.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is slow")
	})
	f.clock.Step(DefaultCredentialsTTL)
	again, err := f.resolve(t)
	require.Nil(t, err, "the last good credentials stay in use")
	assert.Same(t, first.Provider, again.Provider)
	assert.Equal(t, 1, f.builds)
}

func TestInvalidateRereadsTheSecretAndReusesAnUnchangedClient(t *testing.T) {
	p := gitea(nil)
	f := newFixture(t, p, tokenSecret())
	_, err := f.resolve(t)
	require.Nil(t, err)
	f.resolver.Invalidate("team/gitea")
	_, err = f.resolve(t)
	require.Nil(t, err)
	assert.Equal(t, 1, f.builds, "same spec and Secret version: the client is reused")
	gets := 0
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "get" {
			gets++
		}
	}
	assert.Equal(t, 2, gets, "Invalidate forces a fresh read")

	p.Generation = 2
	_, err = f.resolve(t)
	require.Nil(t, err)
	assert.Equal(t, 2, f.builds, "a spec change rebuilds the client")
}

// CheckProvider judges an ScmProvider the way Resolve does, from the same cache: the check and
// the CommitStatuses behind the provider cost one Secret read together.
func TestCheckProviderSharesTheClientCacheWithResolve(t *testing.T) {
	p := gitea(nil)
	f := newFixture(t, p)
	err := f.resolver.CheckProvider(context.Background(), p)
	require.NotNil(t, err)
	assert.Equal(t, ReasonSecretNotFound, err.Reason)

	_, cerr := f.kube.CoreV1().Secrets(ns).Create(context.Background(), tokenSecret(), metav1.CreateOptions{})
	require.NoError(t, cerr)
	f.resolver.Invalidate("team/gitea")
	require.Nil(t, f.resolver.CheckProvider(context.Background(), p))
	_, err = f.resolve(t)
	require.Nil(t, err)
	gets := 0
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "get" {
			gets++
		}
	}
	assert.Equal(t, 2, gets, "one read before the Secret existed, one after; Resolve reused the checked client")
	assert.Equal(t, 1, f.builds)
}

// A Secret event that arrives while the Secret is being read must not leave the answer of that
// read in the cache: nothing else would replace it before the TTL.
func TestInvalidateDuringAReadReadsAgain(t *testing.T) {
	p := gitea(nil)
	f := newFixture(t, p)
	reads := 0
	f.kube.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		reads++
		if reads == 1 {
			// The Secret is created while the first read is on its way back with "not found".
			f.resolver.Invalidate("team/gitea")
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "token")
		}
		return true, tokenSecret(), nil
	})
	require.Nil(t, f.resolver.CheckProvider(context.Background(), p), "the read after the event finds the Secret")
	assert.Equal(t, 2, reads)

	require.Nil(t, f.resolver.CheckProvider(context.Background(), p))
	assert.Equal(t, 2, reads, "no event since: the cached answer is used")
}
