package scmobjects

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/suspend"
)

func withAuth(typ scmv1alpha1.GitAuthType, url string) func(*scmv1alpha1.ScmRepository) {
	return func(r *scmv1alpha1.ScmRepository) {
		r.Spec.URL = url
		r.Spec.Auth = &scmv1alpha1.GitAuth{Type: typ, SecretRef: scmv1alpha1.LocalObjectReference{Name: "git-creds"}}
	}
}

func TestRepositoryReadiness(t *testing.T) {
	const sshURL = "ssh://git@github.com/acme/app.git"
	sshKeys := map[string]string{"identity": "-----BEGIN OPENSSH PRIVATE KEY-----\nxyz", "known_hosts": "github.com ssh-ed25519 AAAAC3Nz"}
	notReady := readyProvider(nil)
	conditions.MarkStalled(&notReady.Status.Conditions, notReady.Generation, resolve.ReasonSecretNotFound, `Secret "github-token" is missing`)
	unchecked := githubProvider(nil)
	stale := readyProvider(nil)
	stale.Generation++
	suspended := readyProvider(nil)
	suspend.Set(suspended, "SCM migration")

	cases := []struct {
		name     string
		repo     *scmv1alpha1.ScmRepository
		provider *scmv1alpha1.ScmProvider
		secret   map[string]string
		// state of Ready: "" for True, else the reason; stalled says whether Stalled is set too.
		reason  string
		stalled bool
		waiting bool
		message string
	}{
		{name: "a public repository", repo: repository(nil), provider: readyProvider(nil),
			message: `url, ScmProvider "github" and no credentials (a public repository) are usable; the git server is not contacted`},
		{name: "token auth", repo: repository(withAuth(scmv1alpha1.GitAuthToken, "https://github.com/acme/app.git")),
			provider: readyProvider(nil), secret: map[string]string{"token": apiToken}, message: `token auth from Secret "git-creds"`},
		{name: "basic auth", repo: repository(withAuth(scmv1alpha1.GitAuthBasic, "https://github.com/acme/app.git")),
			provider: readyProvider(nil), secret: map[string]string{"username": "bot", "password": password}},
		{name: "ssh auth, ssh:// url", repo: repository(withAuth(scmv1alpha1.GitAuthSSH, sshURL)), provider: readyProvider(nil), secret: sshKeys},
		{name: "ssh auth, scp-like url", repo: repository(withAuth(scmv1alpha1.GitAuthSSH, "git@github.com:acme/app.git")),
			provider: readyProvider(nil), secret: sshKeys},
		{name: "http to loopback, allowed", repo: repository(func(r *scmv1alpha1.ScmRepository) {
			r.Spec.URL, r.Spec.AllowInsecureLoopbackHTTP = "http://127.0.0.1:3000/acme/app.git", true
		}), provider: readyProvider(nil)},

		{name: "the ScmProvider is missing", repo: repository(nil), reason: resolve.ReasonProviderNotFound, stalled: true,
			message: `ScmProvider "github" does not exist in namespace "team": create it, or fix spec.providerRef.name`},
		{name: "the ScmProvider is not ready", repo: repository(nil), provider: notReady, reason: ReasonProviderNotReady, stalled: true,
			message: `ScmProvider "github" is not ready (SecretNotFound): Secret "github-token" is missing`},
		{name: "the ScmProvider was not checked yet", repo: repository(nil), provider: unchecked, reason: ReasonWaitingForProvider, waiting: true},
		{name: "the ScmProvider changed since its check", repo: repository(nil), provider: stale, reason: ReasonWaitingForProvider, waiting: true},
		{name: "the ScmProvider is suspended", repo: repository(nil), provider: suspended, reason: resolve.ReasonProviderSuspended,
			message: `ScmProvider "github" is suspended (SCM migration)`},
		{name: "the auth Secret is missing", repo: repository(withAuth(scmv1alpha1.GitAuthSSH, sshURL)), provider: readyProvider(nil),
			reason: resolve.ReasonSecretNotFound, stalled: true,
			message: `Secret "git-creds", named by spec.auth.secretRef, does not exist in namespace "team": create it with the keys ssh auth needs (identity and known_hosts, optionally passphrase)`},
		{name: "token auth without a token", repo: repository(withAuth(scmv1alpha1.GitAuthToken, "https://github.com/acme/app.git")),
			provider: readyProvider(nil), secret: map[string]string{"username": "bot"}, reason: resolve.ReasonSecretInvalid, stalled: true,
			message: `Secret "git-creds", named by spec.auth.secretRef: the Secret for token auth lacks the key(s) token`},
		{name: "basic auth without a password", repo: repository(withAuth(scmv1alpha1.GitAuthBasic, "https://github.com/acme/app.git")),
			provider: readyProvider(nil), secret: map[string]string{"username": "bot", "token": apiToken}, reason: resolve.ReasonSecretInvalid,
			stalled: true, message: "lacks the key(s) password"},
		{name: "ssh auth without known_hosts", repo: repository(withAuth(scmv1alpha1.GitAuthSSH, sshURL)), provider: readyProvider(nil),
			secret: map[string]string{"identity": sshKeys["identity"]}, reason: resolve.ReasonSecretInvalid, stalled: true,
			message: "lacks the key(s) known_hosts"},
		{name: "http to a remote host", repo: repository(func(r *scmv1alpha1.ScmRepository) { r.Spec.URL = "http://github.com/acme/app.git" }),
			provider: readyProvider(nil), reason: ReasonInvalidURL, stalled: true, message: "uses http: use https"},
		{name: "a password in the url", repo: repository(func(r *scmv1alpha1.ScmRepository) {
			r.Spec.URL = "https://bot:" + password + "@github.com/acme/app.git"
		}), provider: readyProvider(nil), reason: ReasonInvalidURL, stalled: true, message: "carries a password"},
		{name: "not a url", repo: repository(func(r *scmv1alpha1.ScmRepository) { r.Spec.URL = "github.com/acme/app" }),
			provider: readyProvider(nil), reason: ReasonInvalidURL, stalled: true, message: "fix spec.url"},
		{name: "ssh auth with an https url", repo: repository(withAuth(scmv1alpha1.GitAuthSSH, "https://github.com/acme/app.git")),
			provider: readyProvider(nil), secret: sshKeys, reason: ReasonAuthDoesNotMatchURL, stalled: true, message: "auth.type ssh does not fit the url"},
		{name: "token auth with an ssh url", repo: repository(withAuth(scmv1alpha1.GitAuthToken, sshURL)),
			provider: readyProvider(nil), secret: map[string]string{"token": apiToken}, reason: ReasonAuthDoesNotMatchURL, stalled: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objects := []runtime.Object{tc.repo}
			if tc.provider != nil {
				objects = append(objects, tc.provider)
			}
			if tc.secret != nil {
				objects = append(objects, secret("git-creds", tc.secret))
			}
			f := newFixture(t, objects...)
			_, err := f.reconcileRepository("app")
			require.NoError(t, err)
			r := f.repository("app")
			assert.Equal(t, int64(2), r.Status.ObservedGeneration)
			ready := readyOf(r.Status.Conditions)
			require.NotNil(t, ready)
			assert.Equal(t, int64(2), ready.ObservedGeneration)
			assert.Contains(t, ready.Message, tc.message)
			if tc.reason == "" {
				assert.Equal(t, metav1.ConditionTrue, ready.Status)
				assert.Equal(t, ReasonValid, ready.Reason)
			} else {
				assert.Equal(t, metav1.ConditionFalse, ready.Status)
				assert.Equal(t, tc.reason, ready.Reason)
			}
			assert.Equal(t, tc.stalled, conditions.IsTrue(r.Status.Conditions, conditions.Stalled), "Stalled")
			assert.Equal(t, tc.waiting, conditions.IsTrue(r.Status.Conditions, conditions.Reconciling), "Reconciling")
			assertNoSecretValues(t, r.Status.Conditions, f.events())
		})
	}
}

func TestRepositoryRechecksOnlyWhatNoEventBringsBack(t *testing.T) {
	repo := repository(withAuth(scmv1alpha1.GitAuthToken, "https://github.com/acme/app.git"))
	for _, tc := range []struct {
		name      string
		watched   bool
		forbidden bool
		want      bool
	}{
		{"missing Secret, not watched", false, false, true},
		{"missing Secret, watched", true, false, false},
		{"forbidden, watched: RBAC has no event", true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, repo.DeepCopy(), readyProvider(nil))
			f.rr.SecretsWatched = tc.watched
			if tc.forbidden {
				f.kube.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "git-creds", errors.New("no"))
				})
			}
			res, err := f.reconcileRepository("app")
			require.NoError(t, err)
			if tc.want {
				assert.Equal(t, recheck, res.RequeueAfter)
			} else {
				assert.Zero(t, res.RequeueAfter)
			}
		})
	}
	t.Run("a missing ScmProvider: its creation brings the repository back", func(t *testing.T) {
		f := newFixture(t, repo.DeepCopy())
		res, err := f.reconcileRepository("app")
		require.NoError(t, err)
		assert.Zero(t, res.RequeueAfter)
	})
}

func TestRepositoryStatusIsWrittenOnlyWhenItChanges(t *testing.T) {
	f := newFixture(t, repository(nil), githubProvider(nil))
	_, err := f.reconcileRepository("app")
	require.NoError(t, err)
	assert.Equal(t, ReasonWaitingForProvider, readyOf(f.repository("app").Status.Conditions).Reason)
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Normal WaitingForScmProvider", "waiting is not a warning")

	_, err = f.reconcileRepository("app")
	require.NoError(t, err)
	assert.Equal(t, 1, f.statusWrites())

	// The provider's own reconciler finds its Secret missing.
	_, err = f.reconcileProvider("github")
	require.NoError(t, err)
	require.Equal(t, 2, f.statusWrites())
	_, err = f.reconcileRepository("app")
	require.NoError(t, err)
	r := f.repository("app")
	assert.Equal(t, ReasonProviderNotReady, readyOf(r.Status.Conditions).Reason)
	assert.Nil(t, conditions.Get(r.Status.Conditions, conditions.Reconciling), "no longer waiting")
	assert.Equal(t, 3, f.statusWrites())
	_, err = f.reconcileRepository("app")
	require.NoError(t, err)
	assert.Equal(t, 3, f.statusWrites())
}

func TestRepositoryLookupFailureIsRetriedWithBackoff(t *testing.T) {
	f := newFixture(t, repository(withAuth(scmv1alpha1.GitAuthToken, "https://github.com/acme/app.git")), readyProvider(nil))
	f.kube.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is slow")
	})
	_, err := f.reconcileRepository("app")
	require.Error(t, err)
	r := f.repository("app")
	assert.Equal(t, resolve.ReasonLookupFailed, readyOf(r.Status.Conditions).Reason)
	assert.False(t, conditions.IsTrue(r.Status.Conditions, conditions.Stalled))
}

func TestSuspendedRepositoryIsNotChecked(t *testing.T) {
	repo := repository(withAuth(scmv1alpha1.GitAuthToken, "https://github.com/acme/app.git"))
	repo.Spec.Suspend = true
	f := newFixture(t, repo)
	_, err := f.reconcileRepository("app")
	require.NoError(t, err)
	r := f.repository("app")
	s := conditions.Get(r.Status.Conditions, conditions.Suspended)
	require.NotNil(t, s)
	assert.Equal(t, suspend.ReasonSpec, s.Reason)
	assert.Nil(t, readyOf(r.Status.Conditions))
	assert.Zero(t, f.secretReads())
}

func TestRepositoriesOfAnotherShardAreLeftAlone(t *testing.T) {
	f := newFixture(t, repository(nil), readyProvider(nil))
	f.rr.Selector = mustSelector(t, "shard=a")
	_, err := f.reconcileRepository("app")
	require.NoError(t, err)
	assert.Zero(t, f.statusWrites())
}
