package manifestrelease_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/options"
)

// One worker, two releases in two namespaces: while the first upgrade waits for a Deployment
// that does not become Ready, the second release is installed. A release takes one step per
// reconcile, and a look at health that finds objects not ready gives the worker back, so no
// release holds the only worker for a whole upgrade.
func TestAReleaseWaitingForHealthDoesNotHoldTheOnlyWorker(t *testing.T) {
	slow, quick := newFixture(t), newFixture(t)
	run := fmt.Sprintf("steps-%d", time.Now().UnixNano()%1_000_000_000)
	startControllerWith(t, env.Config, "", func(o *options.Options) {
		o.Workers, o.WatchLabelSelector = 1, "sluice.dev/test-run="+run
	}, nil)

	slow.setNotReady("web", true)
	slow.configMap("web-src", app("nginx:1.0"))
	slow.createLabelledRelease("web", run, rollbackv1.ManifestReleaseSpec{Source: configMapSource("web-src"), Version: "v1",
		Timeout: &metav1.Duration{Duration: 10 * time.Minute}})
	slow.waitRelease("web", "the upgrade recorded", func(m *rollbackv1.ManifestRelease) bool { return m.Status.Operation != nil })

	quick.configMap("api-src", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api\ndata:\n  k: v\n"})
	quick.createLabelledRelease("api", run, rollbackv1.ManifestReleaseSpec{Source: configMapSource("api-src"), Version: "a1"})
	quick.waitRelease("api", "a1 deployed", deployed(1))
	web := slow.release("web")
	require.NotNil(t, web.Status.Operation, "the first release is still upgrading: %s", describeStatus(web))
	assert.Equal(t, "v1", web.Status.Operation.Version)

	slow.setNotReady("web", false)
	slow.waitRelease("web", "v1 deployed once the Deployment is Ready", deployed(1))
}

// createLabelledRelease creates a release carrying the test run's label, which the controller's
// --watch-label-selector selects.
func (f *fixture) createLabelledRelease(name, run string, spec rollbackv1.ManifestReleaseSpec) {
	f.t.Helper()
	_, err := env.Sluice.RollbackV1alpha1().ManifestReleases(f.ns).Create(f.ctx, &rollbackv1.ManifestRelease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{"sluice.dev/test-run": run}},
		Spec:       spec}, metav1.CreateOptions{})
	require.NoError(f.t, err)
}
