package scmrepository

import (
	"context"
	"errors"
	"testing"

	rt "github.com/sluicehq/sluice/commitstatus-controller/internal/readiness/readinesstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// readinessCase is a repository, its provider and Secret, and the conditions it must get.
type readinessCase struct {
	name     string
	repo     *scmv1alpha1.ScmRepository
	provider *scmv1alpha1.ScmProvider
	secret   map[string]string
	// state of Ready: "" for True, else the reason; stalled says whether Stalled is set too.
	reason  string
	stalled bool
	waiting bool
	message string
}

// readinessCases are the repositories a person writes: auth kinds and urls, and what is missing or wrong.
func readinessCases() []readinessCase {
	const sshURL = "ssh://git@github.com/acme/app.git"
	sshKeys := map[string]string{"identity": "-----BEGIN OPENSSH PRIVATE KEY-----\nxyz", "known_hosts": "github.com ssh-ed25519 AAAAC3Nz"}
	notReady := rt.ReadyProvider(nil)
	conditions.MarkStalled(&notReady.Status.Conditions, notReady.Generation, resolve.ReasonSecretNotFound, `Secret "github-token" is missing`)
	unchecked := rt.GitHubProvider(nil)
	stale := rt.ReadyProvider(nil)
	stale.Generation++
	suspended := rt.ReadyProvider(nil)
	suspend.Set(suspended, "SCM migration")
	return []readinessCase{
		{name: "a public repository", repo: rt.Repository(nil), provider: rt.ReadyProvider(nil),
			message: `url, ScmProvider "github" and no credentials (a public repository) are usable; the git server is not contacted`},
		{name: "token auth", repo: rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthToken, "https://github.com/acme/app.git")),
			provider: rt.ReadyProvider(nil), secret: map[string]string{"token": rt.APIToken}, message: `token auth from Secret "git-creds"`},
		{name: "basic auth", repo: rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthBasic, "https://github.com/acme/app.git")),
			provider: rt.ReadyProvider(nil), secret: map[string]string{"username": "bot", "password": rt.Password}},
		{name: "ssh auth, ssh:// url", repo: rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthSSH, sshURL)), provider: rt.ReadyProvider(nil), secret: sshKeys},
		{name: "ssh auth, scp-like url", repo: rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthSSH, "git@github.com:acme/app.git")),
			provider: rt.ReadyProvider(nil), secret: sshKeys},
		{name: "http to loopback, allowed", repo: rt.Repository(func(r *scmv1alpha1.ScmRepository) {
			r.Spec.URL, r.Spec.AllowInsecureLoopbackHTTP = "http://127.0.0.1:3000/acme/app.git", true
		}), provider: rt.ReadyProvider(nil)},

		{name: "the ScmProvider is missing", repo: rt.Repository(nil), reason: resolve.ReasonProviderNotFound, stalled: true,
			message: `ScmProvider "github" does not exist in namespace "team": create it, or fix spec.providerRef.name`},
		{name: "the ScmProvider is not ready", repo: rt.Repository(nil), provider: notReady, reason: ReasonProviderNotReady, stalled: true,
			message: `ScmProvider "github" is not ready (SecretNotFound): Secret "github-token" is missing`},
		{name: "the ScmProvider was not checked yet", repo: rt.Repository(nil), provider: unchecked, reason: ReasonWaitingForProvider, waiting: true},
		{name: "the ScmProvider changed since its check", repo: rt.Repository(nil), provider: stale, reason: ReasonWaitingForProvider, waiting: true},
		{name: "the ScmProvider is suspended", repo: rt.Repository(nil), provider: suspended, reason: resolve.ReasonProviderSuspended,
			message: `ScmProvider "github" is suspended (SCM migration)`},
		{name: "the auth Secret is missing", repo: rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthSSH, sshURL)), provider: rt.ReadyProvider(nil),
			reason: resolve.ReasonSecretNotFound, stalled: true,
			message: `Secret "git-creds", named by spec.auth.secretRef, does not exist in namespace "team": create it with the keys ssh auth needs (identity and known_hosts, optionally passphrase)`},
		{name: "token auth without a token", repo: rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthToken, "https://github.com/acme/app.git")),
			provider: rt.ReadyProvider(nil), secret: map[string]string{"username": "bot"}, reason: resolve.ReasonSecretInvalid, stalled: true,
			message: `Secret "git-creds", named by spec.auth.secretRef: the Secret for token auth lacks the key(s) token`},
		{name: "basic auth without a password", repo: rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthBasic, "https://github.com/acme/app.git")),
			provider: rt.ReadyProvider(nil), secret: map[string]string{"username": "bot", "token": rt.APIToken}, reason: resolve.ReasonSecretInvalid,
			stalled: true, message: "lacks the key(s) password"},
		{name: "ssh auth without known_hosts", repo: rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthSSH, sshURL)), provider: rt.ReadyProvider(nil),
			secret: map[string]string{"identity": sshKeys["identity"]}, reason: resolve.ReasonSecretInvalid, stalled: true,
			message: "lacks the key(s) known_hosts"},
		{name: "http to a remote host", repo: rt.Repository(func(r *scmv1alpha1.ScmRepository) { r.Spec.URL = "http://github.com/acme/app.git" }),
			provider: rt.ReadyProvider(nil), reason: ReasonInvalidURL, stalled: true, message: "uses http: use https"},
		{name: "a password in the url", repo: rt.Repository(func(r *scmv1alpha1.ScmRepository) {
			r.Spec.URL = "https://bot:" + rt.Password + "@github.com/acme/app.git"
		}), provider: rt.ReadyProvider(nil), reason: ReasonInvalidURL, stalled: true, message: "carries a password"},
		{name: "not a url", repo: rt.Repository(func(r *scmv1alpha1.ScmRepository) { r.Spec.URL = "github.com/acme/app" }),
			provider: rt.ReadyProvider(nil), reason: ReasonInvalidURL, stalled: true, message: "fix spec.url"},
		{name: "ssh auth with an https url", repo: rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthSSH, "https://github.com/acme/app.git")),
			provider: rt.ReadyProvider(nil), secret: sshKeys, reason: ReasonAuthDoesNotMatchURL, stalled: true, message: "auth.type ssh does not fit the url"},
		{name: "token auth with an ssh url", repo: rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthToken, sshURL)),
			provider: rt.ReadyProvider(nil), secret: map[string]string{"token": rt.APIToken}, reason: ReasonAuthDoesNotMatchURL, stalled: true},
	}
}

func TestRepositoryReadiness(t *testing.T) {
	for _, tc := range readinessCases() {
		t.Run(tc.name, func(t *testing.T) {
			objects := []runtime.Object{tc.repo}
			if tc.provider != nil {
				objects = append(objects, tc.provider)
			}
			if tc.secret != nil {
				objects = append(objects, rt.Secret("git-creds", tc.secret))
			}
			f := newFixture(t, objects...)
			_, err := f.reconcileRepository("app")
			require.NoError(t, err)
			r := f.Repository("app")
			assert.Equal(t, int64(2), r.Status.ObservedGeneration)
			ready := rt.ReadyOf(r.Status.Conditions)
			require.NotNil(t, ready)
			assert.Equal(t, int64(2), ready.ObservedGeneration)
			assert.Contains(t, ready.Message, tc.message)
			if tc.reason == "" {
				assert.Equal(t, metav1.ConditionTrue, ready.Status)
				assert.Equal(t, readiness.ReasonValid, ready.Reason)
			} else {
				assert.Equal(t, metav1.ConditionFalse, ready.Status)
				assert.Equal(t, tc.reason, ready.Reason)
			}
			assert.Equal(t, tc.stalled, conditions.IsTrue(r.Status.Conditions, conditions.Stalled), "Stalled")
			assert.Equal(t, tc.waiting, conditions.IsTrue(r.Status.Conditions, conditions.Reconciling), "Reconciling")
			rt.AssertNoSecretValues(t, r.Status.Conditions, f.Events())
		})
	}
}

func TestRepositoryRechecksOnlyWhatNoEventBringsBack(t *testing.T) {
	repo := rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthToken, "https://github.com/acme/app.git"))
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
			f := newFixture(t, repo.DeepCopy(), rt.ReadyProvider(nil))
			f.rr.SecretsWatched = tc.watched
			if tc.forbidden {
				f.Kube.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "git-creds", errors.New("no"))
				})
			}
			res, err := f.reconcileRepository("app")
			require.NoError(t, err)
			if tc.want {
				assert.Equal(t, rt.Recheck, res.RequeueAfter)
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
	f := newFixture(t, rt.Repository(nil), rt.GitHubProvider(nil))
	_, err := f.reconcileRepository("app")
	require.NoError(t, err)
	assert.Equal(t, ReasonWaitingForProvider, rt.ReadyOf(f.Repository("app").Status.Conditions).Reason)
	events := f.Events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Normal WaitingForScmProvider", "waiting is not a warning")

	_, err = f.reconcileRepository("app")
	require.NoError(t, err)
	assert.Equal(t, 1, f.StatusWrites())

	// The provider's own reconciler finds its Secret missing.
	p := f.Provider("github")
	p.Status.ObservedGeneration = p.Generation
	conditions.MarkStalled(&p.Status.Conditions, p.Generation, resolve.ReasonSecretNotFound, `Secret "github-token" does not exist`)
	_, err = f.Sluice.ScmV1alpha1().ScmProviders(rt.NS).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.Sync()
	require.Equal(t, 2, f.StatusWrites())
	_, err = f.reconcileRepository("app")
	require.NoError(t, err)
	r := f.Repository("app")
	assert.Equal(t, ReasonProviderNotReady, rt.ReadyOf(r.Status.Conditions).Reason)
	assert.Nil(t, conditions.Get(r.Status.Conditions, conditions.Reconciling), "no longer waiting")
	assert.Equal(t, 3, f.StatusWrites())
	_, err = f.reconcileRepository("app")
	require.NoError(t, err)
	assert.Equal(t, 3, f.StatusWrites())
}

func TestRepositoryLookupFailureIsRetriedWithBackoff(t *testing.T) {
	f := newFixture(t, rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthToken, "https://github.com/acme/app.git")), rt.ReadyProvider(nil))
	f.Kube.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is slow")
	})
	_, err := f.reconcileRepository("app")
	require.Error(t, err)
	r := f.Repository("app")
	assert.Equal(t, resolve.ReasonLookupFailed, rt.ReadyOf(r.Status.Conditions).Reason)
	assert.False(t, conditions.IsTrue(r.Status.Conditions, conditions.Stalled))
}

func TestSuspendedRepositoryIsNotChecked(t *testing.T) {
	repo := rt.Repository(rt.WithAuth(scmv1alpha1.GitAuthToken, "https://github.com/acme/app.git"))
	repo.Spec.Suspend = true
	f := newFixture(t, repo)
	_, err := f.reconcileRepository("app")
	require.NoError(t, err)
	r := f.Repository("app")
	s := conditions.Get(r.Status.Conditions, conditions.Suspended)
	require.NotNil(t, s)
	assert.Equal(t, suspend.ReasonSpec, s.Reason)
	assert.Nil(t, rt.ReadyOf(r.Status.Conditions))
	assert.Zero(t, f.SecretReads())
}

func TestRepositoriesOfAnotherShardAreLeftAlone(t *testing.T) {
	f := newFixture(t, rt.Repository(nil), rt.ReadyProvider(nil))
	f.rr.Selector = rt.MustSelector(t, "shard=a")
	_, err := f.reconcileRepository("app")
	require.NoError(t, err)
	assert.Zero(t, f.StatusWrites())
}
