package manifestrelease_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/rollback-controller/internal/manifestrelease"
)

// A release whose source ConfigMap does not exist is reconciled as soon as the ConfigMap is
// created, not on its backoff: the release has waited an hour already, so its next retry is an
// hour away (spec.interval), and only the watch of the ConfigMap can wake it within the test.
// The controller runs under the chart's ServiceAccount, which may not read ConfigMaps at all:
// the watch is the tenant's, impersonated.
func TestAMissingSourceConfigMapWakesTheReleaseWhenCreated(t *testing.T) {
	f := newFixture(t)
	cfg := installChart(t, f.ns)
	f.tenant("tenant")
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("web-src"), ServiceAccountName: "tenant",
		Interval: &metav1.Duration{Duration: time.Hour}})
	// A message of its own, so the test sees when the controller has written its own.
	waitingSince := time.Now().Add(-time.Hour).Truncate(time.Second)
	f.markWaitingSince("web", waitingSince, manifestrelease.ReasonSourceNotFound, "seeded by the test")

	f.start(nil, cfg)
	mr := f.waitRelease("web", "the missing ConfigMap reported by the controller", func(mr *rollbackv1.ManifestRelease) bool {
		c := condition(mr, conditions.Stalled)
		return c.Reason == manifestrelease.ReasonSourceNotFound && c.Message != "seeded by the test"
	})
	assert.Contains(t, condition(mr, conditions.Stalled).Message, `ConfigMap "web-src" does not exist`)
	assert.True(t, condition(mr, conditions.Stalled).LastTransitionTime.Time.Equal(waitingSince),
		"stalled since the seeded time, so the backoff is an hour: %v", condition(mr, conditions.Stalled).LastTransitionTime)

	f.configMap("web-src", map[string]string{"config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\n"})
	f.waitRelease("web", "deployed once its source exists", deployed(1))
	assert.Equal(t, []string{"ConfigMap/web-config"}, f.liveObjects("web"))
}

// markWaitingSince writes the status of a release that has been stalled for reason since when,
// as the controller would have: its backoff then waits as long as that, up to spec.interval.
func (f *fixture) markWaitingSince(name string, when time.Time, reason, message string) {
	f.t.Helper()
	mr := f.release(name)
	mr.Status.ObservedGeneration = mr.Generation
	mr.Status.Conditions = []metav1.Condition{
		{Type: conditions.Stalled, Status: metav1.ConditionTrue, ObservedGeneration: mr.Generation, Reason: reason, Message: message,
			LastTransitionTime: metav1.NewTime(when)},
		{Type: conditions.Ready, Status: metav1.ConditionFalse, ObservedGeneration: mr.Generation, Reason: reason, Message: message,
			LastTransitionTime: metav1.NewTime(when)},
	}
	_, err := env.Sluice.RollbackV1alpha1().ManifestReleases(f.ns).UpdateStatus(f.ctx, mr, metav1.UpdateOptions{})
	require.NoError(f.t, err)
}
