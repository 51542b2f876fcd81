package commitstatus

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// observed is an observation of the fixture's CommitStatus against a resolved GitHub target.
func observed(mutate ...func(*observation)) observation {
	cs := commitStatus()
	target := &resolve.Target{ProviderKey: ns + "/github", Endpoint: "github https://api.github.com",
		Repository: scm.Repository{Owner: "acme", Name: "app"}, CredentialsVersion: "c1"}
	o := observation{key: ns + "/health", cs: cs, target: target, recheck: time.Minute}
	for _, m := range mutate {
		m(&o)
	}
	o.next = o.cs.DeepCopy()
	return o
}

func digestOf(o observation) string { return DesiredFor(o.cs, o.target).Digest() }

func synced(o *observation) { o.cs.Status.SyncedDigest = digestOf(*o) }

func TestDecide(t *testing.T) {
	paused := suspend.State{Suspended: true, Message: "paused by alice"}
	cases := []struct {
		name    string
		observe func(*observation)
		act     action
		outcome string
		reason  string
		result  controller.Result
		err     bool
	}{
		{name: "imported from the SCM: nothing is sent or written",
			observe: func(o *observation) { o.imported = true }, act: actNothing, outcome: OutcomeImported},
		{name: "never sent: send",
			act: actSend},
		{name: "the SCM holds the digest: mirror it, no call",
			observe: synced, act: actWrite, outcome: OutcomeUnchanged, reason: ReasonSynced},
		{name: "this process sent it but the status write was lost: mirror the memo",
			observe: func(o *observation) { o.sent, o.hasSent = sentRecord{digest: digestOf(*o), sha: sha}, true },
			act:     actWrite, outcome: OutcomeUnchanged, reason: ReasonSynced},
		{name: "the memo holds an older send: send",
			observe: func(o *observation) { o.sent, o.hasSent = sentRecord{digest: "v1:old"}, true }, act: actSend},
		{name: "refused for good with these inputs: skip by memo, look again later",
			observe: func(o *observation) { o.failedBefore = true },
			act:     actNothing, outcome: OutcomeStalled, result: controller.Result{RequeueAfter: time.Minute}},
		{name: "suspended itself: not sent",
			observe: func(o *observation) { o.selfSuspended = &paused },
			act:     actWrite, outcome: OutcomeSuspended, reason: ReasonNotSent},
		{name: "its provider is suspended: not sent",
			observe: func(o *observation) { o.target.Suspended = &paused },
			act:     actWrite, outcome: OutcomeSuspended, reason: ReasonNotSent},
		{name: "plain git: the object is the status",
			observe: func(o *observation) { o.target.InCluster = true },
			act:     actWrite, outcome: OutcomeInCluster, reason: ReasonInCluster},
		{name: "the API server failed: retried with backoff",
			observe: func(o *observation) {
				o.target, o.unresolved = nil, &resolve.Error{Reason: "ReadFailed", Transient: true}
			},
			act: actWrite, outcome: OutcomeFailed, reason: "ReadFailed", err: true},
		{name: "a Secret is missing: stalled, looked at again later",
			observe: func(o *observation) {
				o.target, o.unresolved = nil, &resolve.Error{Reason: "SecretNotFound", Unwatched: true}
			},
			act: actWrite, outcome: OutcomeStalled, reason: "SecretNotFound", result: controller.Result{RequeueAfter: time.Minute}},
		{name: "the ScmRepository is missing: stalled until it comes",
			observe: func(o *observation) { o.target, o.unresolved = nil, &resolve.Error{Reason: "RepositoryNotFound"} },
			act:     actWrite, outcome: OutcomeStalled, reason: "RepositoryNotFound", err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var o observation
			if c.observe != nil {
				o = observed(c.observe)
			} else {
				o = observed()
			}
			before := o.next.DeepCopy()
			p := decide(o)
			assert.Equal(t, c.act, p.act)
			assert.Equal(t, c.outcome, p.outcome)
			assert.Equal(t, c.result, p.result)
			assert.Equal(t, c.err, p.err != nil, "err %v", p.err)
			if c.reason != "" {
				assert.Equal(t, c.reason, conditions.Get(p.status.Conditions, conditions.Ready).Reason)
			}
			assert.Equal(t, before, o.next, "decide changes no observation")
		})
	}
}

func TestSettle(t *testing.T) {
	at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	rateLimited := scm.NewError("github", "set", scm.KindRateLimited, 429, "slow down", nil)
	rateLimited.RetryAfter = 42 * time.Second
	cases := []struct {
		name     string
		err      error
		outcome  string
		reason   string
		status   metav1.ConditionStatus
		result   controller.Result
		remember bool
		err2     bool
	}{
		{name: "accepted: synced, the digest recorded", outcome: OutcomeSent, reason: ReasonSynced, status: metav1.ConditionTrue},
		{name: "rate limited: back off until the reset", err: rateLimited, outcome: OutcomeRateLimited,
			reason: ReasonRateLimited, status: metav1.ConditionFalse, result: controller.Result{RequeueAfter: 42 * time.Second}},
		{name: "rate limited without a reset time: the default wait", err: scm.NewError("github", "set", scm.KindRateLimited, 429, "slow down", nil),
			outcome: OutcomeRateLimited, reason: ReasonRateLimited, status: metav1.ConditionFalse, result: controller.Result{RequeueAfter: defaultRateLimitWait}},
		{name: "refused for good: give up, remember the inputs", err: scm.NewError("github", "set", scm.KindForbidden, 403, "no", nil),
			outcome: OutcomeStalled, reason: ReasonForbidden, status: metav1.ConditionFalse, result: controller.Result{RequeueAfter: time.Minute}, remember: true},
		{name: "the SCM is down: retried with backoff", err: errors.New("connection refused"),
			outcome: OutcomeFailed, reason: ReasonSCMUnavailable, status: metav1.ConditionFalse, err2: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := observed()
			p := settle(o, decide(o), scm.CommitStatus{ProviderID: "check-7"}, at, c.err)
			assert.Equal(t, actWrite, p.act)
			assert.Equal(t, c.outcome, p.outcome)
			assert.Equal(t, c.result, p.result)
			assert.Equal(t, c.err2, p.err != nil)
			assert.Equal(t, c.remember, p.rememberFailure != "")
			ready := conditions.Get(p.status.Conditions, conditions.Ready)
			assert.Equal(t, c.reason, ready.Reason)
			assert.Equal(t, c.status, ready.Status)
			if c.err == nil {
				assert.Equal(t, digestOf(o), p.status.SyncedDigest)
				assert.Equal(t, "check-7", p.status.ProviderID)
				assert.Equal(t, commitstatusv1alpha1.CommitStatusSuccess, p.status.SyncedPhase)
				assert.True(t, p.status.LastSyncTime.Time.Equal(at))
			} else {
				assert.Empty(t, p.status.SyncedDigest, "nothing is recorded as synced")
			}
		})
	}
}
