package scmprovider

import (
	"context"
	"errors"
	"testing"

	rt "github.com/sluicehq/sluice/commitstatus-controller/internal/readiness/readinesstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/readiness"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// readinessCase is a provider, the objects beside it, and the Ready condition it must get.
type readinessCase struct {
	name     string
	provider *scmv1alpha1.ScmProvider
	objects  []runtime.Object
	// reason is empty for Ready=True.
	reason  string
	message string
}

// readinessCases are the providers a person writes: tokens, apps, CA bundles, and what is missing or wrong.
func readinessCases(t *testing.T) []readinessCase {
	appKey := rt.RSAKeyPEM(t)
	testCAPEM := rt.SelfSignedPEM(t)
	tokenSecret := rt.Secret("github-token", map[string]string{"token": rt.APIToken})
	app := func(p *scmv1alpha1.ScmProvider) {
		p.Spec.GitHubApp = &scmv1alpha1.GitHubApp{AppID: 12, InstallationID: 34}
	}
	return []readinessCase{
		{name: "a token in the Secret", provider: rt.GitHubProvider(nil), objects: []runtime.Object{tokenSecret},
			message: `type github at its default URL is usable and Secret "github-token" has the keys it needs; the SCM is not called`},
		{name: "GitHub Enterprise with a CA bundle Secret", provider: rt.GitHubProvider(func(p *scmv1alpha1.ScmProvider) {
			p.Spec.BaseURL = "https://github.example.com"
			p.Spec.CABundle = &scmv1alpha1.CABundleReference{Kind: "Secret", Name: "ca", Key: "bundle.pem"}
		}), objects: []runtime.Object{tokenSecret, rt.Secret("ca", map[string]string{"bundle.pem": testCAPEM})},
			message: "type github at https://github.example.com is usable"},
		{name: "a GitHub App with its key", provider: rt.GitHubProvider(app),
			objects: []runtime.Object{rt.Secret("github-token", map[string]string{"githubAppPrivateKey": appKey})}},
		{name: "plain git needs no Secret", provider: rt.GitHubProvider(func(p *scmv1alpha1.ScmProvider) {
			p.Spec.Type, p.Spec.SecretRef = scmv1alpha1.ScmProviderGit, nil
		}), message: "type git has no SCM API"},

		{name: "the Secret is missing", provider: rt.GitHubProvider(nil), reason: resolve.ReasonSecretNotFound,
			message: `Secret "github-token", named by ScmProvider "github", does not exist in namespace "team": create it, or fix the ScmProvider`},
		{name: "the Secret has no token", provider: rt.GitHubProvider(nil), reason: resolve.ReasonSecretInvalid,
			objects: []runtime.Object{rt.Secret("github-token", map[string]string{"tokn": rt.APIToken})},
			message: `secret "github-token" has no key token: put an API access token for the github server there`},
		{name: "a GitHub App without its key", provider: rt.GitHubProvider(app), reason: resolve.ReasonSecretInvalid,
			objects: []runtime.Object{tokenSecret}, message: "has no key githubAppPrivateKey"},
		{name: "a GitHub App key that is not PEM", provider: rt.GitHubProvider(app), reason: resolve.ReasonProviderInvalid,
			objects: []runtime.Object{rt.Secret("github-token", map[string]string{"githubAppPrivateKey": rt.Password})},
			message: "is not a PEM-encoded RSA key"},
		{name: "the CA bundle Secret is missing", provider: rt.GitHubProvider(func(p *scmv1alpha1.ScmProvider) {
			p.Spec.CABundle = &scmv1alpha1.CABundleReference{Kind: "Secret", Name: "ca"}
		}), objects: []runtime.Object{tokenSecret}, reason: resolve.ReasonSecretNotFound, message: `Secret "ca", named by ScmProvider "github"`},
		{name: "the CA bundle lacks its key", provider: rt.GitHubProvider(func(p *scmv1alpha1.ScmProvider) {
			p.Spec.CABundle = &scmv1alpha1.CABundleReference{Kind: "ConfigMap", Name: "ca"}
		}), objects: []runtime.Object{tokenSecret, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rt.NS, Name: "ca"}}},
			reason: resolve.ReasonCABundleInvalid, message: `ConfigMap "ca" has no key ca.crt`},
		{name: "an http base URL to a remote host", provider: rt.GitHubProvider(func(p *scmv1alpha1.ScmProvider) {
			p.Spec.BaseURL = "http://github.example.com"
		}), objects: []runtime.Object{tokenSecret}, reason: resolve.ReasonProviderInvalid, message: "uses http: use https"},
		{name: "a base URL with another scheme", provider: rt.GitHubProvider(func(p *scmv1alpha1.ScmProvider) {
			p.Spec.BaseURL = "ftp://github.example.com"
		}), objects: []runtime.Object{tokenSecret}, reason: resolve.ReasonProviderInvalid, message: `has scheme "ftp": use https`},
		{name: "a rate limit that is not a number", provider: rt.GitHubProvider(func(p *scmv1alpha1.ScmProvider) {
			p.Spec.RateLimit = &scmv1alpha1.RateLimit{QPS: "fast"}
		}), objects: []runtime.Object{tokenSecret}, reason: resolve.ReasonProviderInvalid, message: `rateLimit.qps "fast"`},
		{name: "a type this controller does not know", provider: rt.GitHubProvider(func(p *scmv1alpha1.ScmProvider) {
			p.Spec.Type = "bitbucket"
		}), objects: []runtime.Object{tokenSecret}, reason: resolve.ReasonUnsupportedType,
			message: `type "bitbucket", which this controller does not support; supported types: `},
	}
}

func TestProviderReadiness(t *testing.T) {
	for _, tc := range readinessCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, append([]runtime.Object{tc.provider}, tc.objects...)...)
			res, err := f.reconcileProvider("github")
			require.NoError(t, err)
			p := f.Provider("github")
			assert.Equal(t, int64(3), p.Status.ObservedGeneration)
			ready := rt.ReadyOf(p.Status.Conditions)
			require.NotNil(t, ready)
			assert.Equal(t, int64(3), ready.ObservedGeneration)
			assert.Contains(t, ready.Message, tc.message)
			if tc.reason == "" {
				assert.Equal(t, metav1.ConditionTrue, ready.Status)
				assert.Equal(t, readiness.ReasonValid, ready.Reason)
				assert.False(t, conditions.IsTrue(p.Status.Conditions, conditions.Stalled))
				assert.Zero(t, res.RequeueAfter, "nothing to look at again")
			} else {
				assert.Equal(t, metav1.ConditionFalse, ready.Status)
				assert.Equal(t, tc.reason, ready.Reason)
				assert.True(t, conditions.IsTrue(p.Status.Conditions, conditions.Stalled), "a person must act")
			}
			rt.AssertNoSecretValues(t, p.Status.Conditions, f.Events())
		})
	}
}

// Without a Secret watch a fix in a Secret is seen on a timer; with one, the Secret event brings
// the ScmProvider back, and only what has no event (a ConfigMap, RBAC) keeps the timer.
func TestProviderRechecksOnlyWhatNoEventBringsBack(t *testing.T) {
	forbidden := func(f *fixture) {
		f.Kube.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "github-token", errors.New("no"))
		})
	}
	cases := []struct {
		name     string
		watched  bool
		provider *scmv1alpha1.ScmProvider
		prepare  func(*fixture)
		reason   string
		want     bool
	}{
		{"missing Secret, not watched", false, rt.GitHubProvider(nil), nil, resolve.ReasonSecretNotFound, true},
		{"missing Secret, watched", true, rt.GitHubProvider(nil), nil, resolve.ReasonSecretNotFound, false},
		{"forbidden, watched: RBAC has no event", true, rt.GitHubProvider(nil), forbidden, resolve.ReasonSecretForbidden, true},
		{"missing Secret beside a ConfigMap CA bundle, watched", true, rt.GitHubProvider(func(p *scmv1alpha1.ScmProvider) {
			p.Spec.CABundle = &scmv1alpha1.CABundleReference{Kind: "ConfigMap", Name: "ca"}
		}), nil, resolve.ReasonSecretNotFound, true},
		{"an invalid spec: its own change brings it back", false, rt.GitHubProvider(func(p *scmv1alpha1.ScmProvider) {
			p.Spec.Type = "bitbucket"
			p.Spec.SecretRef = nil
		}), nil, resolve.ReasonUnsupportedType, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.provider)
			f.pr.SecretsWatched = tc.watched
			if tc.prepare != nil {
				tc.prepare(f)
			}
			res, err := f.reconcileProvider("github")
			require.NoError(t, err)
			assert.Equal(t, tc.reason, rt.ReadyOf(f.Provider("github").Status.Conditions).Reason)
			if tc.want {
				assert.Equal(t, rt.Recheck, res.RequeueAfter)
			} else {
				assert.Zero(t, res.RequeueAfter)
			}
		})
	}
}

// The status is written when the verdict changes, not on every reconcile: a resync or a repeated
// event writes nothing and emits nothing.
func TestProviderStatusIsWrittenOnlyWhenItChanges(t *testing.T) {
	f := newFixture(t, rt.GitHubProvider(nil))
	_, err := f.reconcileProvider("github")
	require.NoError(t, err)
	require.Equal(t, 1, f.StatusWrites())
	events := f.Events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning SecretNotFound")

	for range 3 {
		_, err = f.reconcileProvider("github")
		require.NoError(t, err)
	}
	assert.Equal(t, 1, f.StatusWrites(), "the same verdict is not written again")
	assert.Empty(t, f.Events())

	// The Secret appears; the Secret watch invalidates the resolver's cached read.
	_, err = f.Kube.CoreV1().Secrets(rt.NS).Create(context.Background(), rt.Secret("github-token", map[string]string{"token": rt.APIToken}), metav1.CreateOptions{})
	require.NoError(t, err)
	f.Resolver.Invalidate(rt.NS + "/github")
	_, err = f.reconcileProvider("github")
	require.NoError(t, err)
	p := f.Provider("github")
	assert.Equal(t, 2, f.StatusWrites())
	assert.Equal(t, metav1.ConditionTrue, rt.ReadyOf(p.Status.Conditions).Status)
	assert.Nil(t, conditions.Get(p.Status.Conditions, conditions.Stalled), "Stalled is removed once Ready")
	events = f.Events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Normal Valid")
}

func TestProviderLookupFailureIsRetriedWithBackoff(t *testing.T) {
	f := newFixture(t, rt.GitHubProvider(nil))
	f.Kube.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is slow")
	})
	_, err := f.reconcileProvider("github")
	require.Error(t, err, "returned to the queue, which backs off")
	p := f.Provider("github")
	ready := rt.ReadyOf(p.Status.Conditions)
	assert.Equal(t, resolve.ReasonLookupFailed, ready.Reason)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.False(t, conditions.IsTrue(p.Status.Conditions, conditions.Stalled), "not a person's problem")
}

func TestSuspendedProviderIsNotChecked(t *testing.T) {
	p := rt.GitHubProvider(nil)
	suspend.Set(p, "SCM migration")
	f := newFixture(t, p)
	res, err := f.reconcileProvider("github")
	require.NoError(t, err)
	assert.Zero(t, res.RequeueAfter)
	got := f.Provider("github")
	s := conditions.Get(got.Status.Conditions, conditions.Suspended)
	require.NotNil(t, s)
	assert.Equal(t, "SCM migration", s.Message)
	assert.Nil(t, rt.ReadyOf(got.Status.Conditions), "no verdict while suspended")
	assert.Zero(t, f.SecretReads())
}

func TestProvidersOfAnotherShardAreLeftAlone(t *testing.T) {
	f := newFixture(t, rt.GitHubProvider(nil))
	f.pr.Selector = rt.MustSelector(t, "shard=a")
	_, err := f.reconcileProvider("github")
	require.NoError(t, err)
	assert.Zero(t, f.StatusWrites())
	assert.Zero(t, f.SecretReads())
}

func TestDeletedProviderIsForgotten(t *testing.T) {
	f := newFixture(t)
	res, err := f.reconcileProvider("gone")
	require.NoError(t, err)
	assert.Zero(t, res.RequeueAfter)
	assert.Zero(t, f.StatusWrites())
}
