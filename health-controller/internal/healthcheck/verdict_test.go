package healthcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/text"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func res(name string, s healthv1alpha1.ResourceStatus) healthv1alpha1.ResourceHealth {
	return healthv1alpha1.ResourceHealth{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: name, Status: s, Message: name + " says " + string(s)}
}

func at(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

// step feeds the verdict back as the previous status, as the controller does.
func step(prev healthv1alpha1.HealthCheckStatus, v verdict, gen int64, rev string) healthv1alpha1.HealthCheckStatus {
	return healthv1alpha1.HealthCheckStatus{
		ObservedGeneration: gen, ObservedRevision: rev, Healthy: v.Healthy,
		LastHealthyTime: v.LastHealthyTime, LastHealthyRevision: v.LastHealthyRevision,
		HealthySince: v.HealthySince, UnhealthySince: v.UnhealthySince,
	}
}

func TestAllCurrentIsHealthyAtOnceWithoutSoak(t *testing.T) {
	v := judge(verdictInput{Now: t0, Generation: 1, Revision: "r1", Timeout: 5 * time.Minute,
		Resources: []healthv1alpha1.ResourceHealth{res("a", healthv1alpha1.StatusCurrent), res("b", healthv1alpha1.StatusCurrent)}})
	assert.Equal(t, Healthy, v.State)
	assert.Equal(t, Success, v.Phase)
	assert.True(t, v.Healthy)
	assert.Equal(t, "2/2", v.Summary)
	assert.Equal(t, "2/2 Current", v.Description)
	assert.Equal(t, t0, v.LastHealthyTime.Time)
	assert.Equal(t, "r1", v.LastHealthyRevision)
	assert.Nil(t, v.UnhealthySince)
	assert.Zero(t, v.RequeueAfter)
}

func TestSoakTimeDelaysHealthyAndRestartsOnANewRevision(t *testing.T) {
	current := []healthv1alpha1.ResourceHealth{res("a", healthv1alpha1.StatusCurrent)}
	in := verdictInput{Now: t0, Generation: 1, Revision: "r1", Timeout: 5 * time.Minute, SoakTime: 10 * time.Minute, Resources: current}

	v := judge(in)
	assert.Equal(t, Soaking, v.State)
	assert.Equal(t, Pending, v.Phase)
	assert.False(t, v.Healthy)
	assert.Equal(t, 10*time.Minute, v.RequeueAfter)
	assert.Nil(t, v.LastHealthyTime)

	in.Previous, in.Now = step(in.Previous, v, 1, "r1"), t0.Add(4*time.Minute)
	v = judge(in)
	assert.Equal(t, Soaking, v.State)
	assert.Equal(t, 6*time.Minute, v.RequeueAfter, "the soak clock keeps running across evaluations")
	assert.Contains(t, v.Message, "soaking for 6m0s more")

	in.Previous, in.Now = step(in.Previous, v, 1, "r1"), t0.Add(10*time.Minute)
	v = judge(in)
	assert.Equal(t, Healthy, v.State)
	assert.Equal(t, t0.Add(10*time.Minute), v.LastHealthyTime.Time)

	// A new revision that is already Current must soak again before it counts.
	in.Previous, in.Now, in.Revision = step(in.Previous, v, 1, "r1"), t0.Add(11*time.Minute), "r2"
	v = judge(in)
	assert.Equal(t, Soaking, v.State)
	assert.Equal(t, "r1", v.LastHealthyRevision, "r1 is still the last healthy revision")
}

func TestTimeoutTurnsInProgressIntoFailed(t *testing.T) {
	in := verdictInput{Now: t0, Generation: 1, Revision: "r1", Timeout: 5 * time.Minute,
		Resources: []healthv1alpha1.ResourceHealth{res("a", healthv1alpha1.StatusCurrent), res("b", healthv1alpha1.StatusInProgress)}}
	v := judge(in)
	assert.Equal(t, Progressing, v.State)
	assert.Equal(t, Pending, v.Phase)
	assert.Equal(t, 5*time.Minute, v.RequeueAfter, "time alone will change the verdict at the timeout")
	assert.Equal(t, t0, v.UnhealthySince.Time)

	in.Previous, in.Now = step(in.Previous, v, 1, "r1"), t0.Add(5*time.Minute)
	v = judge(in)
	assert.Equal(t, TimedOut, v.State)
	assert.Equal(t, Failure, v.Phase)
	assert.Equal(t, int32(1), v.Counts.Failed)
	assert.Equal(t, int32(0), v.Counts.InProgress)
	require.Equal(t, "b", v.Resources[0].Name, "the timed-out object is listed first")
	assert.Equal(t, healthv1alpha1.StatusFailed, v.Resources[0].Status)
	assert.Contains(t, v.Resources[0].Message, "still in progress after the 5m0s timeout")
	assert.Contains(t, v.Message, "not healthy after the 5m0s timeout")

	// A new revision gets the whole timeout again.
	in.Previous, in.Revision = step(in.Previous, v, 1, "r1"), "r2"
	v = judge(in)
	assert.Equal(t, Progressing, v.State)
}

func TestFailedWinsOverEverythingElse(t *testing.T) {
	v := judge(verdictInput{Now: t0, Generation: 1, Timeout: time.Minute, Resources: []healthv1alpha1.ResourceHealth{
		res("a", healthv1alpha1.StatusCurrent), res("b", healthv1alpha1.StatusInProgress),
		res("c", healthv1alpha1.StatusUnknown), res("d", healthv1alpha1.StatusFailed), res("e", healthv1alpha1.StatusNotFound),
	}})
	assert.Equal(t, Failed, v.State)
	assert.Equal(t, Failure, v.Phase)
	assert.Equal(t, "1 Failed, 1 Unknown, 1 NotFound, 1 InProgress, 1 Current of 5", v.Description)
	assert.Contains(t, v.Message, "Failed Deployment apps/d: d says Failed", "the message names the failing object")
	var order []string
	for _, r := range v.Resources {
		order = append(order, r.Name)
	}
	assert.Equal(t, []string{"d", "c", "e", "b", "a"}, order, "least healthy first")
}

func TestUnknownAndNotFoundAreNotFailedBeforeTheTimeout(t *testing.T) {
	v := judge(verdictInput{Now: t0, Generation: 1, Timeout: time.Minute, Resources: []healthv1alpha1.ResourceHealth{
		res("a", healthv1alpha1.StatusUnknown), res("b", healthv1alpha1.StatusNotFound)}})
	assert.Equal(t, Progressing, v.State)
	assert.Equal(t, Pending, v.Phase)
	assert.Zero(t, v.Counts.Failed)
}

func TestNoTargetsIsNeverHealthy(t *testing.T) {
	v := judge(verdictInput{Now: t0, Generation: 1, Timeout: time.Minute})
	assert.Equal(t, NoTargets, v.State)
	assert.Equal(t, Pending, v.Phase)
	assert.False(t, v.Healthy)
	assert.Equal(t, "0/0", v.Summary)
}

func TestResourcesAreBoundedAndMessagesCut(t *testing.T) {
	var rs []healthv1alpha1.ResourceHealth
	for i := range 3 * healthv1alpha1.MaxResources {
		r := res(fmt.Sprintf("r%03d", i), healthv1alpha1.StatusCurrent)
		if i == 120 {
			r.Status = healthv1alpha1.StatusFailed
			r.Message = strings.Repeat("é", 400)
		}
		rs = append(rs, r)
	}
	v := judge(verdictInput{Now: t0, Generation: 1, Timeout: time.Minute, Resources: rs})
	require.Len(t, v.Resources, healthv1alpha1.MaxResources)
	assert.Equal(t, int32(3*healthv1alpha1.MaxResources), v.Counts.Total)
	assert.Equal(t, "r120", v.Resources[0].Name, "a failing object is never cut off the list")
	assert.LessOrEqual(t, len(v.Resources[0].Message), healthv1alpha1.MaxResourceMessage)
	assert.True(t, strings.HasSuffix(v.Resources[0].Message, "é"+text.Ellipsis), "cut on a character boundary")
}

func TestLastHealthyTimeMarksTheTransitionOnly(t *testing.T) {
	current := []healthv1alpha1.ResourceHealth{res("a", healthv1alpha1.StatusCurrent)}
	in := verdictInput{Now: t0, Generation: 1, Revision: "r1", Timeout: time.Minute, Resources: current}
	v := judge(in)
	first := v.LastHealthyTime

	in.Previous, in.Now = step(in.Previous, v, 1, "r1"), t0.Add(time.Hour)
	v = judge(in)
	assert.Equal(t, first, v.LastHealthyTime, "staying healthy does not rewrite the time")

	in.Previous, in.Now = step(in.Previous, v, 1, "r1"), t0.Add(2*time.Hour)
	in.Resources = []healthv1alpha1.ResourceHealth{res("a", healthv1alpha1.StatusFailed)}
	v = judge(in)
	assert.Equal(t, first, v.LastHealthyTime, "turning unhealthy keeps when it was last healthy")
	assert.Equal(t, t0.Add(2*time.Hour), v.UnhealthySince.Time)
}
