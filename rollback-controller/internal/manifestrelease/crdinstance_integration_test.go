package manifestrelease_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// A version that ships a CRD and an object of it is applied CRD first (waiting until it is
// Established), and, when its test fails, rolled back: the object is deleted before its CRD,
// which the rollback no longer refuses, since every object of the CRD is the release's own. An
// object of that kind that is not the release's still stops a rollback
// (TestRollbackKeepsTheCRDOfTheFailedVersionWhileItHasObjects).
func TestAVersionWithACRDAndItsObjectIsRolledBack(t *testing.T) {
	f := newFixture(t)
	f.configMap("tests", map[string]string{"smoke.yaml": smokeTest})
	f.configMap("src", app("nginx:1.0"))
	f.start(nil)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: configMapSource("src"), Version: "v1", Test: smokeTests(false), Timeout: seconds(60)})
	f.waitRelease("web", "v1 deployed", deployed(1))

	f.setJobOutcome(f.failWhenImage("2.0"))
	v2 := app("nginx:2.0")
	v2["gadgets.yaml"] = crd(f.group(), "Gadget", "v1")
	v2["gadget.yaml"] = fmt.Sprintf("apiVersion: %s/v1\nkind: Gadget\nmetadata:\n  name: g1\nspec:\n  size: 3\n", f.group())
	f.configMap("src", v2)
	f.patchVersion("web", "v2")
	mr := f.waitRelease("web", "v2 failed its test and was rolled back", rolledBackFrom(2))
	assert.Equal(t, int64(1), mr.Status.UpgradeNumber)
	assert.Equal(t, rollbackv1.TestFailed, mr.Status.History[0].Test)
	assert.Equal(t, "nginx:1.0", f.deploymentImage("web"))
	assert.False(t, f.customExists("Gadget", "v1", "g1"), "the Gadget of v2 is deleted")
	f.waitCRDGone("gadgets." + f.group())
	assert.Equal(t, []string{"ConfigMap/web-config", "Deployment/web"}, f.liveObjects("web"))
}
