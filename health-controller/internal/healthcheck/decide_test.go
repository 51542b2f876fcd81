package healthcheck

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/runtime/controller"
	"github.com/sluicehq/sluice/pkg/suspend"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

var decideNow = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// checkFor is a HealthCheck at generation 2 that publishes to key health-staging, or publishes
// nothing when publish is false.
func checkFor(publish bool) *healthv1alpha1.HealthCheck {
	hc := &healthv1alpha1.HealthCheck{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "hc-uid", Generation: 2}}
	if publish {
		hc.Spec.CommitStatus = &healthv1alpha1.CommitStatusPublication{Key: "health-staging",
			RepositoryRef: healthv1alpha1.RepositoryReference{Name: "shop"}, Revision: healthv1alpha1.RevisionSource{Fixed: sha}}
	}
	return hc
}

const (
	goodSHA = "1111111111111111111111111111111111111111"
	badSHA  = "2222222222222222222222222222222222222222"
)

// kustomizationApplying is the Kustomization apps/apps while kustomize-controller applies commit
// and lastAppliedRevision is still applied.
func kustomizationApplying(commit, applied string) *healthv1alpha1.ResourceHealth {
	return &healthv1alpha1.ResourceHealth{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Namespace: "apps", Name: "apps",
		Status: healthv1alpha1.StatusInProgress, Message: "kustomize-controller has not finished applying revision main@sha1:" + commit +
			" (status.lastAttemptedRevision); status.lastAppliedRevision is still main@sha1:" + applied}
}

func evaluated(statuses ...healthv1alpha1.ResourceStatus) *evaluation {
	e := &evaluation{Now: decideNow, Revision: sha, Commit: sha, CommitStatus: commitStatusRead{Served: true}}
	for i, s := range statuses {
		e.Resources = append(e.Resources, healthv1alpha1.ResourceHealth{APIVersion: "apps/v1", Kind: "Deployment",
			Namespace: "apps", Name: string(rune('a' + i)), Status: s, Message: string(s)})
	}
	return e
}

// published is the CommitStatus decide creates for hc's verdict, as a watch would hold it.
func published(t *testing.T, hc *healthv1alpha1.HealthCheck, owned bool) *unstructured.Unstructured {
	t.Helper()
	cs := desiredCommitStatus(hc, verdict{State: Healthy, Phase: Success, Description: "1/1 Current"}, sha)
	if !owned {
		cs.OwnerReferences = nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cs)
	require.NoError(t, err)
	return &unstructured.Unstructured{Object: m}
}

func condition(d decision, t string) *metav1.Condition { return conditions.Get(d.Status.Conditions, t) }

// decideCase is an observation and what the decision made from it must hold.
type decideCase struct {
	name  string
	obs   func(t *testing.T) *observation
	check func(t *testing.T, d decision)
}

// decideCases are the situations a HealthCheck meets: healthy, unhealthy, unknown, suspended, published before.
var decideCases = []decideCase{{
	name: "healthy targets are Ready and create the CommitStatus, success for the commit",
	obs: func(*testing.T) *observation {
		return &observation{HealthCheck: checkFor(true), Evaluated: evaluated(healthv1alpha1.StatusCurrent)}
	},
	check: func(t *testing.T, d decision) {
		assert.True(t, d.Status.Healthy)
		assert.Equal(t, metav1.ConditionTrue, condition(d, conditions.Ready).Status)
		require.NotNil(t, d.Publish.Create)
		assert.Equal(t, commitstatusv1alpha1.CommitStatusPhase("success"), d.Publish.Create.Spec.Phase)
		assert.Equal(t, sha, d.Publish.Create.Spec.SHA)
		assert.Equal(t, "health-staging", d.Publish.Create.Labels[commitstatusv1alpha1.KeyLabel])
		assert.Equal(t, &healthv1alpha1.PublishedCommitStatus{Name: "web", SHA: sha, Phase: "success", Description: "Healthy: 1/1 Current"}, d.Status.CommitStatus)
		assert.Equal(t, healthv1alpha1.ReasonPublished, condition(d, healthv1alpha1.ConditionCommitStatusPublished).Reason)
		require.NotNil(t, d.Announce.Published)
		assert.Equal(t, []event{{corev1.EventTypeNormal, "Healthy", "1/1 Current"}}, d.Announce.Events)
		assert.Equal(t, "Healthy", d.Announce.State)
		assert.NoError(t, d.Err)
	},
}, {
	name: "a failed target is not Ready, publishes failure, and warns",
	obs: func(*testing.T) *observation {
		return &observation{HealthCheck: checkFor(true), Evaluated: evaluated(healthv1alpha1.StatusCurrent, healthv1alpha1.StatusFailed)}
	},
	check: func(t *testing.T, d decision) {
		assert.False(t, d.Status.Healthy)
		assert.Equal(t, "Failed", condition(d, conditions.Ready).Reason)
		assert.Equal(t, commitstatusv1alpha1.CommitStatusPhase("failure"), d.Publish.Create.Spec.Phase)
		require.Len(t, d.Announce.Events, 1)
		assert.Equal(t, corev1.EventTypeWarning, d.Announce.Events[0].Type)
		assert.Equal(t, int32(1), d.Announce.Counts.Failed)
	},
}, {
	name: "the revert's healthy objects, live before Flux finished applying the revert, credit nothing to the bad commit",
	obs: func(*testing.T) *observation {
		hc := checkFor(true)
		hc.Status.ObservedRevision, hc.Status.LastHealthyRevision = "main@sha1:"+badSHA, "main@sha1:"+goodSHA
		hc.Status.CommitStatus = &healthv1alpha1.PublishedCommitStatus{Name: "web", SHA: badSHA, Phase: "failure"}
		e := evaluated(healthv1alpha1.StatusCurrent, healthv1alpha1.StatusCurrent)
		e.Revision, e.Commit, e.Unsettled = "main@sha1:"+sha, sha, kustomizationApplying(sha, badSHA)
		return &observation{HealthCheck: hc, Evaluated: e}
	},
	check: func(t *testing.T, d decision) {
		assert.False(t, d.Status.Healthy)
		assert.Nil(t, d.Status.HealthySince, "the soak starts once Flux has finished applying")
		assert.Equal(t, "main@sha1:"+goodSHA, d.Status.LastHealthyRevision)
		assert.Equal(t, string(Progressing), condition(d, conditions.Ready).Reason)
		assert.Contains(t, condition(d, conditions.Ready).Message, "no verdict while the revision source has not finished applying main@sha1:"+sha)
		require.NotNil(t, d.Publish.Create)
		assert.Equal(t, commitstatusv1alpha1.CommitStatusPending, d.Publish.Create.Spec.Phase)
		assert.Equal(t, sha, d.Publish.Create.Spec.SHA, "pending for the commit being applied; the bad commit keeps its failure")
		assert.NotContains(t, []string{string(Success), string(Failure)}, string(d.Publish.Create.Spec.Phase))
	},
}, {
	name: "the bad commit's failed objects, live before Flux finished applying it, fail no good commit",
	obs: func(*testing.T) *observation {
		e := evaluated(healthv1alpha1.StatusCurrent, healthv1alpha1.StatusFailed)
		e.Revision, e.Commit, e.Unsettled = "main@sha1:"+sha, sha, kustomizationApplying(sha, goodSHA)
		return &observation{HealthCheck: checkFor(true), Evaluated: e}
	},
	check: func(t *testing.T, d decision) {
		assert.Equal(t, string(Progressing), condition(d, conditions.Ready).Reason)
		assert.Equal(t, commitstatusv1alpha1.CommitStatusPending, d.Publish.Create.Spec.Phase)
		assert.Equal(t, sha, d.Publish.Create.Spec.SHA)
		assert.Empty(t, d.Announce.Events, "no Failed warning for a verdict not credited")
	},
}, {
	name: "an Argo CD Application still syncing credits no verdict either",
	obs: func(*testing.T) *observation {
		e := evaluated(healthv1alpha1.StatusCurrent)
		e.Unsettled = &healthv1alpha1.ResourceHealth{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: "argocd", Name: "web",
			Status: healthv1alpha1.StatusInProgress, Message: "Argo CD is syncing revision " + sha + " (status.operationState.phase is Running)"}
		return &observation{HealthCheck: checkFor(true), Evaluated: e}
	},
	check: func(t *testing.T, d decision) {
		assert.False(t, d.Status.Healthy)
		assert.Equal(t, commitstatusv1alpha1.CommitStatusPending, d.Publish.Create.Spec.Phase)
		r := d.Status.Resources[0]
		assert.Equal(t, "Application", r.Kind, "the source holding the verdict back is listed first")
		assert.Equal(t, healthv1alpha1.StatusInProgress, r.Status)
	},
}, {
	name: "a revision Flux does not finish applying within the timeout fails",
	obs: func(*testing.T) *observation {
		hc := checkFor(true)
		hc.Status.ObservedGeneration, hc.Status.ObservedRevision = 2, "main@sha1:"+sha
		hc.Status.UnhealthySince = &metav1.Time{Time: decideNow.Add(-DefaultTimeout)}
		e := evaluated(healthv1alpha1.StatusCurrent)
		e.Revision, e.Commit, e.Unsettled = "main@sha1:"+sha, sha, kustomizationApplying(sha, goodSHA)
		return &observation{HealthCheck: hc, Evaluated: e}
	},
	check: func(t *testing.T, d decision) {
		assert.Equal(t, string(TimedOut), condition(d, conditions.Ready).Reason)
		assert.Equal(t, commitstatusv1alpha1.CommitStatusFailure, d.Publish.Create.Spec.Phase)
		assert.Equal(t, sha, d.Publish.Create.Spec.SHA)
		assert.Contains(t, condition(d, conditions.Ready).Message, "has not finished applying")
	},
}, {
	name: "a CommitStatus already saying so is neither updated nor announced again",
	obs: func(t *testing.T) *observation {
		hc := checkFor(true)
		hc.Status.CommitStatus = &healthv1alpha1.PublishedCommitStatus{Name: "web", SHA: sha, Phase: "success", Description: "Healthy: 1/1 Current"}
		hc.Status.Conditions = []metav1.Condition{{Type: conditions.Ready, Status: metav1.ConditionTrue, Reason: "Healthy"}}
		hc.Status.ObservedRevision = sha
		e := evaluated(healthv1alpha1.StatusCurrent)
		e.CommitStatus.Existing = published(t, hc, true)
		return &observation{HealthCheck: hc, Evaluated: e}
	},
	check: func(t *testing.T, d decision) {
		assert.Nil(t, d.Publish.Create)
		assert.Nil(t, d.Publish.Update)
		assert.Nil(t, d.Announce.Published)
		assert.Empty(t, d.Announce.Events)
		assert.Nil(t, d.Announce.Changed)
	},
}, {
	name: "a CommitStatus another owner holds is left alone",
	obs: func(t *testing.T) *observation {
		hc := checkFor(true)
		e := evaluated(healthv1alpha1.StatusCurrent)
		e.CommitStatus.Existing = published(t, hc, false)
		return &observation{HealthCheck: hc, Evaluated: e}
	},
	check: func(t *testing.T, d decision) {
		assert.Equal(t, publication{}, d.Publish)
		assert.Nil(t, d.Status.CommitStatus)
		assert.Equal(t, healthv1alpha1.ReasonNameConflict, condition(d, healthv1alpha1.ConditionCommitStatusPublished).Reason)
	},
}, {
	name: "without the CommitStatus CRD health is still computed",
	obs: func(*testing.T) *observation {
		e := evaluated(healthv1alpha1.StatusCurrent)
		e.CommitStatus.Served = false
		return &observation{HealthCheck: checkFor(true), Evaluated: e}
	},
	check: func(t *testing.T, d decision) {
		assert.True(t, d.Status.Healthy)
		assert.Equal(t, publication{}, d.Publish)
		assert.Equal(t, healthv1alpha1.ReasonCommitStatusCRDMissing, condition(d, healthv1alpha1.ConditionCommitStatusPublished).Reason)
	},
}, {
	name: "an unreadable revision publishes nothing and says why",
	obs: func(*testing.T) *observation {
		e := evaluated(healthv1alpha1.StatusCurrent)
		e.RevisionErr = errors.New("Kustomization apps/web not found")
		return &observation{HealthCheck: checkFor(true), Evaluated: e}
	},
	check: func(t *testing.T, d decision) {
		assert.Equal(t, publication{}, d.Publish)
		c := condition(d, healthv1alpha1.ConditionCommitStatusPublished)
		assert.Equal(t, healthv1alpha1.ReasonRevisionUnavailable, c.Reason)
		assert.Equal(t, "Kustomization apps/web not found", c.Message)
	},
}, {
	name: "spec.commitStatus removed deletes what was published",
	obs: func(*testing.T) *observation {
		hc := checkFor(false)
		hc.Status.CommitStatus = &healthv1alpha1.PublishedCommitStatus{Name: "web", SHA: sha, Phase: "success"}
		hc.Status.Conditions = []metav1.Condition{{Type: healthv1alpha1.ConditionCommitStatusPublished, Status: metav1.ConditionTrue, Reason: "Published"}}
		return &observation{HealthCheck: hc, Evaluated: evaluated(healthv1alpha1.StatusCurrent)}
	},
	check: func(t *testing.T, d decision) {
		assert.True(t, d.Publish.Delete)
		assert.NotNil(t, d.Publish.Previous, "kept should the delete fail")
		assert.Nil(t, d.Status.CommitStatus)
		assert.Nil(t, condition(d, healthv1alpha1.ConditionCommitStatusPublished))
	},
}, {
	name: "bad CEL stalls, stops watching, warns once and is not retried",
	obs: func(*testing.T) *observation {
		return &observation{HealthCheck: checkFor(true), Stalled: &problem{healthv1alpha1.ReasonInvalidCELExpression, errors.New("spec.healthCheckExprs: bad")}}
	},
	check: func(t *testing.T, d decision) {
		assert.Equal(t, metav1.ConditionTrue, condition(d, conditions.Stalled).Status)
		assert.True(t, d.Release)
		assert.True(t, d.Announce.CompileError)
		assert.Equal(t, []event{{corev1.EventTypeWarning, healthv1alpha1.ReasonInvalidCELExpression, "spec.healthCheckExprs: bad"}}, d.Announce.Events)
		assert.True(t, controller.IsPermanent(d.Err))
		assert.Equal(t, publication{}, d.Publish)
	},
}, {
	name: "the same stall again makes no second Event",
	obs: func(*testing.T) *observation {
		hc := checkFor(false)
		conditions.MarkStalled(&hc.Status.Conditions, 2, healthv1alpha1.ReasonInvalidTarget, "spec.targets[0]: bad")
		return &observation{HealthCheck: hc, Stalled: &problem{healthv1alpha1.ReasonInvalidTarget, errors.New("spec.targets[0]: bad")}}
	},
	check: func(t *testing.T, d decision) {
		assert.Empty(t, d.Announce.Events)
		assert.False(t, d.Announce.CompileError)
	},
}, {
	name: "watches that have not listed are waited for, and the clocks restart on a new spec",
	obs: func(*testing.T) *observation {
		hc := checkFor(false)
		hc.Status.ObservedGeneration, hc.Status.UnhealthySince = 1, &metav1.Time{Time: decideNow}
		return &observation{HealthCheck: hc, Waiting: true, WaitingFor: []string{"apps/v1/deployments in apps"}}
	},
	check: func(t *testing.T, d decision) {
		c := condition(d, conditions.Reconciling)
		assert.Equal(t, healthv1alpha1.ReasonWaitingForWatches, c.Reason)
		assert.Contains(t, c.Message, "apps/v1/deployments in apps")
		assert.Nil(t, d.Status.UnhealthySince)
		assert.Equal(t, int64(2), d.Status.ObservedGeneration)
		assert.Equal(t, stateWaiting, d.Announce.State)
	},
}, {
	name: "a suspended check is not healthy and stops watching",
	obs: func(*testing.T) *observation {
		hc := checkFor(false)
		hc.Status.Healthy, hc.Status.HealthySince = true, &metav1.Time{Time: decideNow}
		return &observation{HealthCheck: hc, Suspend: suspend.State{Suspended: true, Reason: suspend.ReasonSpec, Message: "by spec.suspend"}}
	},
	check: func(t *testing.T, d decision) {
		assert.False(t, d.Status.Healthy)
		assert.Nil(t, d.Status.HealthySince)
		assert.Equal(t, metav1.ConditionUnknown, condition(d, conditions.Ready).Status)
		assert.True(t, d.Release)
		assert.Equal(t, stateSuspended, d.Announce.State)
	},
}}

func TestDecide(t *testing.T) {
	for _, c := range decideCases {
		t.Run(c.name, func(t *testing.T) {
			o := c.obs(t)
			before := o.HealthCheck.DeepCopy()
			d := decide(o)
			assert.Equal(t, before, o.HealthCheck, "decide changed the observed HealthCheck")
			c.check(t, d)
		})
	}
}
