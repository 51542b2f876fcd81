package apitests

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

func approving(revision string) *gatingv1alpha1.Gate {
	return &gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "flux-system"},
		Spec:       gatingv1alpha1.GateSpec{Closed: true, Approvals: []gatingv1alpha1.GateApproval{{Revision: revision}}},
	}
}

// Every written form of an approved revision is checked at admission, not only a bare SHA: an
// approval that can never match anything must not show in the APPROVED column.
func TestCRDAdmitsOnlyWholeRevisionsInEveryForm(t *testing.T) {
	crd := loadGateCRD(t)
	sha1 := strings.Repeat("3549486a", 5)
	sha256 := strings.Repeat("abcd", 16)
	for _, good := range []string{
		"main@sha1:" + sha1,
		"release/1.4@sha1:" + strings.ToUpper(sha1),
		"refs/heads/main@sha1:" + sha1,
		"main@sha256:" + sha256,
		"v1.2@sha256:" + sha256,
		"latest@sha256:" + sha256,
		"sha256:" + sha256,
		"sha1:" + sha1,
		sha1,
		sha256,
		"6.0.1",
		"v1.2.3-rc.1+build.5",
		"6.0.1+" + sha1[:12],
	} {
		assert.Empty(t, validateGate(t, crd, approving(good)), "%q is a whole revision", good)
	}
	for bad, says := range map[string]string{
		"main@sha1:3549486":            "written in full",
		"main@sha1:":                   "written in full",
		"sha256:abcd":                  "written in full",
		"main@sha256:" + sha1:          "written in full",
		"sha1:" + sha256:               "written in full",
		"3549486":                      "written in full",
		sha1[:39]:                      "written in full",
		"main@" + sha1:                 "revision must be one of",
		"main@md5:" + sha1:             "revision must be one of",
		"main":                         "revision must be one of",
		"6.0":                          "revision must be one of",
		"main@sha1:" + sha1 + "@extra": "revision must be one of",
		"r1, r2":                       "no spaces or commas",
	} {
		errs := validateGate(t, crd, approving(bad))
		if assert.NotEmpty(t, errs, "%q must be refused", bad) {
			assert.Contains(t, errs.ToAggregate().Error(), says, "%q", bad)
		}
	}
}
