package commitstatus

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/suspend"
)

func ready(t *testing.T, cs *commitstatusv1alpha1.CommitStatus) *metav1.Condition {
	t.Helper()
	c := conditions.Get(cs.Status.Conditions, conditions.Ready)
	require.NotNil(t, c, "Ready condition in %+v", cs.Status)
	return c
}

func TestFirstReconcileSendsTheStatusAndRecordsItsDigest(t *testing.T) {
	f := newFixture(t, commitStatus(), repository("github"), githubProvider())
	res, err := f.reconcile()
	require.NoError(t, err)
	assert.Zero(t, res.RequeueAfter)

	sent := f.scm.sent()
	require.Len(t, sent, 1)
	assert.Equal(t, scm.CommitStatus{
		SHA: sha, Name: "sluice/health", State: scm.StatusSuccess,
		Description: "healthy in staging", TargetURL: "https://dash.example.com/staging",
	}, sent[0])
	assert.Equal(t, []string{token}, f.scm.tokens, "the provider is built with the token from the Secret")

	cs := f.get()
	assert.Equal(t, commitstatusv1alpha1.CommitStatusSuccess, cs.Status.SyncedPhase)
	assert.Equal(t, sha, cs.Status.SyncedSHA)
	assert.Equal(t, sha[:7], cs.Status.ShortSHA, "for the SHA printer column")
	assert.Equal(t, "1", cs.Status.ProviderID)
	assert.NotEmpty(t, cs.Status.SyncedDigest)
	require.NotNil(t, cs.Status.LastSyncTime)
	assert.True(t, cs.Status.LastSyncTime.Time.Equal(f.clock.Now()))
	assert.Equal(t, int64(1), cs.Status.ObservedGeneration)
	c := ready(t, cs)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, ReasonSynced, c.Reason)
	assert.Contains(t, c.Message, "acme/app@0123456")
	assert.Len(t, f.events(), 1, "one Event for the first sync")
}

func TestTheSameSpecIsNeverSentTwice(t *testing.T) {
	f := newFixture(t, commitStatus(), repository("github"), githubProvider())
	for range 3 {
		_, err := f.reconcile()
		require.NoError(t, err)
	}
	require.Len(t, f.scm.sent(), 1)
	f.events()

	// A restarted controller has no memory; the digest in status is enough.
	restarted := newFixture(t, f.get(), repository("github"), githubProvider())
	_, err := restarted.reconcile()
	require.NoError(t, err)
	assert.Empty(t, restarted.scm.sent(), "after a restart, the digest in status prevents a resend")
	assert.Empty(t, restarted.events(), "a reconcile that changes nothing emits no Event")

	// Changing only suspend-unrelated metadata or a non-synced field sends nothing either.
	f.update(func(cs *commitstatusv1alpha1.CommitStatus) { cs.Labels["team"] = "platform" })
	_, err = f.reconcile()
	require.NoError(t, err)
	assert.Len(t, f.scm.sent(), 1)
}

func TestChangingThePhaseSendsTheNewState(t *testing.T) {
	f := newFixture(t, commitStatus(func(cs *commitstatusv1alpha1.CommitStatus) { cs.Spec.Phase = commitstatusv1alpha1.CommitStatusPending }),
		repository("github"), githubProvider())
	_, err := f.reconcile()
	require.NoError(t, err)
	before := f.get().Status.SyncedDigest

	f.update(func(cs *commitstatusv1alpha1.CommitStatus) { cs.Spec.Phase = commitstatusv1alpha1.CommitStatusFailure })
	_, err = f.reconcile()
	require.NoError(t, err)

	sent := f.scm.sent()
	require.Len(t, sent, 2)
	assert.Equal(t, scm.StatusFailure, sent[1].State)
	assert.Equal(t, "1", sent[1].ProviderID, "the previous id is passed on for the same commit, so a GitHub App updates its check run")
	cs := f.get()
	assert.Equal(t, commitstatusv1alpha1.CommitStatusFailure, cs.Status.SyncedPhase)
	assert.NotEqual(t, before, cs.Status.SyncedDigest)
	assert.Equal(t, int64(2), cs.Status.ObservedGeneration)

	f.update(func(cs *commitstatusv1alpha1.CommitStatus) { cs.Spec.SHA = otherSHA })
	_, err = f.reconcile()
	require.NoError(t, err)
	sent = f.scm.sent()
	require.Len(t, sent, 3)
	assert.Empty(t, sent[2].ProviderID, "a new commit starts a new status")
	assert.Equal(t, otherSHA[:7], f.get().Status.ShortSHA)
}

func TestALostStatusWriteDoesNotResend(t *testing.T) {
	f := newFixture(t, commitStatus(), repository("github"), githubProvider())
	failures := 1
	f.sluice.PrependReactor("update", "commitstatuses", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" || failures == 0 {
			return false, nil, nil
		}
		failures--
		return true, nil, apierrors.NewInternalError(errors.New("etcd timed out"))
	})
	_, err := f.reconcile()
	require.Error(t, err, "the status write failed after the SCM call")
	assert.Empty(t, f.get().Status.SyncedDigest)

	_, err = f.reconcile()
	require.NoError(t, err)
	assert.Len(t, f.scm.sent(), 1, "the retry writes the status without calling the SCM again")
	assert.NotEmpty(t, f.get().Status.SyncedDigest)
	assert.Equal(t, "1", f.get().Status.ProviderID)
}

func TestPlainGitKeepsTheStatusInTheCluster(t *testing.T) {
	f := newFixture(t, commitStatus(), repository("plain"), gitProvider())
	res, err := f.reconcile()
	require.NoError(t, err)
	assert.Zero(t, res)
	assert.Empty(t, f.scm.sent())
	c := ready(t, f.get())
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, ReasonInCluster, c.Reason)
	assert.Contains(t, c.Message, "nothing is sent")
	assert.Empty(t, f.get().Status.SyncedDigest, "nothing was synced to an SCM")
}

func TestMissingReferencesStallWithAnActionableMessage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		objects   []runtime.Object
		secret    map[string]string
		reason    string
		message   string
		permanent bool
	}{
		{name: "no repository", objects: nil, reason: resolve.ReasonRepositoryNotFound,
			message: `ScmRepository "app" does not exist in namespace "team"`, permanent: true},
		{name: "no provider", objects: []runtime.Object{repository("github")}, reason: resolve.ReasonProviderNotFound,
			message: `ScmProvider "github", named by ScmRepository "app", does not exist`, permanent: true},
		{name: "no secret", objects: []runtime.Object{repository("github"), githubProvider(func(p *scmv1alpha1.ScmProvider) {
			p.Spec.SecretRef.Name = "missing"
		})}, reason: resolve.ReasonSecretNotFound, message: `Secret "missing", named by ScmProvider "github", does not exist`},
		{name: "secret without token", objects: []runtime.Object{repository("github"), githubProvider(func(p *scmv1alpha1.ScmProvider) {
			p.Spec.SecretRef.Name = "broken"
		})}, secret: map[string]string{"tokn": token}, reason: resolve.ReasonSecretInvalid, message: `secret "broken" has no key token`},
		{name: "unsupported type", objects: []runtime.Object{repository("github"), githubProvider(func(p *scmv1alpha1.ScmProvider) {
			p.Spec.Type = "bitbucket"
		})}, reason: resolve.ReasonUnsupportedType, message: `type "bitbucket", which this controller does not support`, permanent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, append(tc.objects, commitStatus())...)
			if tc.reason == resolve.ReasonUnsupportedType {
				f.r.Resolver.New = nil
			}
			if tc.secret != nil {
				_, err := f.kube.CoreV1().Secrets(ns).Create(context.Background(), secret("broken", tc.secret), metav1.CreateOptions{})
				require.NoError(t, err)
			}
			res, err := f.reconcile()
			if tc.permanent {
				assert.True(t, controller.IsPermanent(err), "a spec problem waits for a change: %v", err)
			} else {
				require.NoError(t, err)
				assert.Equal(t, DefaultRecheckInterval, res.RequeueAfter, "Secrets are not watched, so the object is looked at again")
			}
			cs := f.get()
			assert.True(t, conditions.IsTrue(cs.Status.Conditions, conditions.Stalled))
			c := ready(t, cs)
			assert.Equal(t, metav1.ConditionFalse, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Contains(t, c.Message, tc.message)
			assertNoSecretIn(t, cs, f.events())
			assert.Empty(t, f.scm.sent())
		})
	}
}

func assertNoSecretIn(t *testing.T, cs *commitstatusv1alpha1.CommitStatus, events []string) {
	t.Helper()
	data, err := json.Marshal(cs)
	require.NoError(t, err)
	assert.NotContains(t, string(data), token)
	for _, e := range events {
		assert.NotContains(t, e, token)
	}
}

func TestPermanentSCMErrorsStallAndAreNotRetriedWithTheSameInputs(t *testing.T) {
	f := newFixture(t, commitStatus(), repository("github"), githubProvider())
	f.scm.fail(scmError(http.StatusUnauthorized, nil))
	res, err := f.reconcile()
	require.NoError(t, err)
	assert.Equal(t, DefaultRecheckInterval, res.RequeueAfter)
	cs := f.get()
	assert.True(t, conditions.IsTrue(cs.Status.Conditions, conditions.Stalled))
	c := ready(t, cs)
	assert.Equal(t, ReasonUnauthorized, c.Reason)
	assert.Contains(t, c.Message, `ScmProvider "team/github"`)
	assert.Contains(t, c.Message, "check the token")
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning "+ReasonUnauthorized)
	assertNoSecretIn(t, cs, events)

	// The status write and the periodic re-check see the same object and credentials: no call.
	for range 2 {
		f.clock.Step(time.Second)
		_, err = f.reconcile()
		require.NoError(t, err)
	}
	assert.Len(t, f.scm.sent(), 1)
	assert.Empty(t, f.events())

	// A rotated token is read once the credentials cache expires, and the call is made again.
	s, err := f.kube.CoreV1().Secrets(ns).Get(context.Background(), "github-token", metav1.GetOptions{})
	require.NoError(t, err)
	s.Data["token"] = []byte("tok-rotated-0123456789")
	s.ResourceVersion = "2"
	_, err = f.kube.CoreV1().Secrets(ns).Update(context.Background(), s, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.scm.fail(nil)
	f.clock.Step(resolve.DefaultCredentialsTTL)
	_, err = f.reconcile()
	require.NoError(t, err)
	assert.Len(t, f.scm.sent(), 2)
	assert.Equal(t, "tok-rotated-0123456789", f.scm.tokens[len(f.scm.tokens)-1])
	c = ready(t, f.get())
	assert.Equal(t, ReasonSynced, c.Reason)
	assert.False(t, conditions.IsTrue(f.get().Status.Conditions, conditions.Stalled))
}

func TestATouchedObjectIsRetriedAfterAPermanentError(t *testing.T) {
	f := newFixture(t, commitStatus(), repository("github"), githubProvider())
	f.scm.fail(scmError(http.StatusNotFound, nil))
	_, err := f.reconcile()
	require.NoError(t, err)
	assert.Equal(t, ReasonNotFound, ready(t, f.get()).Reason)

	// Access was granted on the SCM; a person annotates the object to retry.
	f.scm.fail(nil)
	cs := f.get()
	cs.Annotations = map[string]string{"sluice.dev/retry": "1"}
	cs.ResourceVersion = "999"
	_, err = f.sluice.CommitstatusV1alpha1().CommitStatuses(ns).Update(context.Background(), cs, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = f.reconcile()
	require.NoError(t, err)
	assert.Len(t, f.scm.sent(), 2)
	assert.Equal(t, ReasonSynced, ready(t, f.get()).Reason)
}

func TestRateLimitedCallsAreRequeuedAfterTheReset(t *testing.T) {
	f := newFixture(t, commitStatus(), repository("github"), githubProvider())
	f.scm.fail(scmError(http.StatusTooManyRequests, http.Header{"Retry-After": {"42"}}))
	res, err := f.reconcile()
	require.NoError(t, err, "a rate limit is not an error to back off from: the SCM said when to come back")
	assert.Equal(t, 42*time.Second, res.RequeueAfter)
	cs := f.get()
	assert.True(t, conditions.IsTrue(cs.Status.Conditions, conditions.Reconciling))
	assert.Equal(t, ReasonRateLimited, ready(t, cs).Reason)
	assert.False(t, conditions.IsTrue(cs.Status.Conditions, conditions.Stalled))
}

func TestTransientErrorsAreRetriedWithBackoff(t *testing.T) {
	f := newFixture(t, commitStatus(), repository("github"), githubProvider())
	f.scm.fail(scmError(http.StatusBadGateway, nil))
	_, err := f.reconcile()
	require.Error(t, err)
	assert.False(t, controller.IsPermanent(err))
	cs := f.get()
	assert.Equal(t, ReasonSCMUnavailable, ready(t, cs).Reason)
	assert.False(t, conditions.IsTrue(cs.Status.Conditions, conditions.Stalled))

	f.scm.fail(nil)
	_, err = f.reconcile()
	require.NoError(t, err)
	assert.Equal(t, ReasonSynced, ready(t, f.get()).Reason)
	assert.Len(t, f.scm.sent(), 2)
}

func TestSuspendedObjectsAreNotSent(t *testing.T) {
	t.Run("the CommitStatus", func(t *testing.T) {
		f := newFixture(t, commitStatus(func(cs *commitstatusv1alpha1.CommitStatus) {
			cs.Annotations = map[string]string{suspend.Annotation: "audit"}
		}), repository("github"), githubProvider())
		_, err := f.reconcile()
		require.NoError(t, err)
		assert.Empty(t, f.scm.sent())
		s := conditions.Get(f.get().Status.Conditions, conditions.Suspended)
		require.NotNil(t, s)
		assert.Equal(t, "audit", s.Message)
		assertNotSent(t, f.get(), "not sent: suspended: audit")
	})
	t.Run("a phase changed while suspended is not shown as synced", func(t *testing.T) {
		f := newFixture(t, commitStatus(), repository("github"), githubProvider())
		_, err := f.reconcile()
		require.NoError(t, err)
		f.update(func(cs *commitstatusv1alpha1.CommitStatus) {
			cs.Annotations = map[string]string{suspend.Annotation: "freeze"}
		})
		_, err = f.reconcile()
		require.NoError(t, err)
		assert.Equal(t, metav1.ConditionTrue, ready(t, f.get()).Status, "what was sent is still what the spec asks")

		f.update(func(cs *commitstatusv1alpha1.CommitStatus) { cs.Spec.Phase = commitstatusv1alpha1.CommitStatusFailure })
		_, err = f.reconcile()
		require.NoError(t, err)
		assert.Len(t, f.scm.sent(), 1)
		assertNotSent(t, f.get(), "not sent: suspended: freeze")
		assert.Equal(t, commitstatusv1alpha1.CommitStatusSuccess, f.get().Status.SyncedPhase)

		f.update(func(cs *commitstatusv1alpha1.CommitStatus) { cs.Spec.Phase = commitstatusv1alpha1.CommitStatusSuccess })
		_, err = f.reconcile()
		require.NoError(t, err)
		c := ready(t, f.get())
		assert.Equal(t, metav1.ConditionTrue, c.Status, "the spec asks again for what the SCM holds")
		assert.Equal(t, ReasonSynced, c.Reason)
		assert.Len(t, f.scm.sent(), 1)
	})
	t.Run("its ScmProvider", func(t *testing.T) {
		f := newFixture(t, commitStatus(), repository("github"), githubProvider(func(p *scmv1alpha1.ScmProvider) { p.Spec.Suspend = true }))
		_, err := f.reconcile()
		require.NoError(t, err)
		assert.Empty(t, f.scm.sent())
		s := conditions.Get(f.get().Status.Conditions, conditions.Suspended)
		require.NotNil(t, s)
		assert.Equal(t, resolve.ReasonProviderSuspended, s.Reason)
		assert.Contains(t, s.Message, `ScmProvider "github" is suspended`)
		assertNotSent(t, f.get(), "not sent: suspended: "+s.Message)
	})
	t.Run("resumed", func(t *testing.T) {
		f := newFixture(t, commitStatus(func(cs *commitstatusv1alpha1.CommitStatus) { cs.Spec.Suspend = true }), repository("github"), githubProvider())
		_, err := f.reconcile()
		require.NoError(t, err)
		f.update(func(cs *commitstatusv1alpha1.CommitStatus) { cs.Spec.Suspend = false })
		_, err = f.reconcile()
		require.NoError(t, err)
		assert.Len(t, f.scm.sent(), 1)
		assert.Nil(t, conditions.Get(f.get().Status.Conditions, conditions.Suspended))
		assert.Equal(t, metav1.ConditionTrue, ready(t, f.get()).Status)
	})
}

func assertNotSent(t *testing.T, cs *commitstatusv1alpha1.CommitStatus, message string) {
	t.Helper()
	c := ready(t, cs)
	assert.Equal(t, metav1.ConditionUnknown, c.Status, "SYNCED must not read True for a state never sent")
	assert.Equal(t, ReasonNotSent, c.Reason)
	assert.Equal(t, message, c.Message)
}

func TestOneSecretReadServesManyStatuses(t *testing.T) {
	f := newFixture(t, commitStatus(), repository("github"), githubProvider())
	for i := range 5 {
		f.update(func(cs *commitstatusv1alpha1.CommitStatus) { cs.Spec.Description = "run " + string(rune('a'+i)) })
		_, err := f.reconcile()
		require.NoError(t, err)
	}
	reads := 0
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "secrets" {
			reads++
		}
		assert.NotContains(t, []string{"list", "watch"}, a.GetVerb(), "Secrets are never listed or watched")
	}
	assert.Equal(t, 1, reads, "the Secret is read once per credentials TTL, not per reconcile")
	assert.Len(t, f.scm.tokens, 1, "the provider is built once")
}

func TestDeletedObjectsAreForgotten(t *testing.T) {
	f := newFixture(t, commitStatus(), repository("github"), githubProvider())
	_, err := f.reconcile()
	require.NoError(t, err)
	require.NoError(t, f.sluice.CommitstatusV1alpha1().CommitStatuses(ns).Delete(context.Background(), "health", metav1.DeleteOptions{}))
	_, err = f.reconcile()
	require.NoError(t, err)
	_, remembered := f.r.memo.lastSent(statusKey)
	assert.False(t, remembered)
}

// An imported status came from the SCM: it is never sent back, and its status is left alone.
func TestImportedStatusesAreNeverMirroredBack(t *testing.T) {
	imported := commitStatus()
	imported.Labels = map[string]string{commitstatusv1alpha1.KeyLabel: "ci-lint", commitstatusv1alpha1.ImportedLabel: "true"}
	f := newFixture(t, imported, repository("github"), githubProvider())
	res, err := f.reconcile()
	require.NoError(t, err)
	assert.Zero(t, res)
	assert.Empty(t, f.scm.sent())
	assert.Empty(t, f.get().Status.Conditions, "no status write either")
}
