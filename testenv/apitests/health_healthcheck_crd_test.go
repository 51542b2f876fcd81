package apitests

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/testenv/crdvalidate"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

func loadCRD(t *testing.T) *crdvalidate.CRD {
	t.Helper()
	crd, err := crdvalidate.Load("health.sluice.dev_healthchecks.yaml")
	require.NoError(t, err)
	return crd
}

func validate(t *testing.T, crd *crdvalidate.CRD, obj *healthv1alpha1.HealthCheck) field.ErrorList {
	t.Helper()
	errs, err := crd.Validate(obj)
	require.NoError(t, err)
	return errs
}

func valid() *healthv1alpha1.HealthCheck {
	return &healthv1alpha1.HealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "staging", Namespace: "flux-system"},
		Spec: healthv1alpha1.HealthCheckSpec{
			ServiceAccountName: "health-reader",
			Targets: []healthv1alpha1.Target{
				{Kustomization: &healthv1alpha1.SourceReference{Name: "apps"}},
				{Object: &healthv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Namespace: "web"}},
				{Selector: &healthv1alpha1.KindSelector{APIVersion: "cert-manager.io/v1", Kind: "Certificate",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
				{Application: &healthv1alpha1.SourceReference{Name: "guestbook", Namespace: "argocd"}},
			},
			HealthCheckExprs: []healthv1alpha1.CustomHealthCheck{{APIVersion: "example.org/v1", Current: "has(self.status)"}},
			Timeout:          &metav1.Duration{Duration: 10 * time.Minute},
			SoakTime:         &metav1.Duration{Duration: 5 * time.Minute},
			CommitStatus: &healthv1alpha1.CommitStatusPublication{
				Key: "health-staging", RepositoryRef: healthv1alpha1.RepositoryReference{Name: "app"},
				Revision: healthv1alpha1.RevisionSource{Kustomization: &healthv1alpha1.SourceReference{Name: "apps"}},
				URL:      "https://grafana.example.com/d/staging",
			},
		},
	}
}

func TestCRDAcceptsAFullHealthCheck(t *testing.T) {
	assert.Empty(t, validate(t, loadCRD(t), valid()))
}

func TestCRDRejectsBadSpecs(t *testing.T) {
	crd := loadCRD(t)
	cases := map[string]struct {
		mutate func(*healthv1alpha1.HealthCheck)
		want   string
	}{
		"no targets": {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.Targets = nil }, "targets"},
		"a target naming two things": {func(hc *healthv1alpha1.HealthCheck) {
			hc.Spec.Targets[0].Application = &healthv1alpha1.SourceReference{Name: "x"}
		}, "exactly one of object, selector, kustomization or application"},
		"an empty target": {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.Targets[0] = healthv1alpha1.Target{} },
			"exactly one of object, selector, kustomization or application"},
		"two revision sources": {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.CommitStatus.Revision.Fixed = sha },
			"exactly one of kustomization, application or fixed"},
		"no revision source": {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.CommitStatus.Revision = healthv1alpha1.RevisionSource{} },
			"exactly one of kustomization, application or fixed"},
		"short fixed commit": {func(hc *healthv1alpha1.HealthCheck) {
			hc.Spec.CommitStatus.Revision = healthv1alpha1.RevisionSource{Fixed: "abc1234"}
		}, "fixed"},
		"zero timeout":               {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.Timeout.Duration = 0 }, "timeout must be positive"},
		"negative soak":              {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.SoakTime.Duration = -time.Minute }, "soakTime must be between"},
		"key not a label":            {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.CommitStatus.Key = "health staging" }, "key"},
		"ftp url":                    {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.CommitStatus.URL = "ftp://example.com" }, "http or https"},
		"no current":                 {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.HealthCheckExprs[0].Current = "" }, "current"},
		"object with name":           {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.Targets[1].Object.Name = "" }, "name"},
		"service account not a name": {func(hc *healthv1alpha1.HealthCheck) { hc.Spec.ServiceAccountName = "Team A" }, "serviceAccountName"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			hc := valid()
			tc.mutate(hc)
			errs := validate(t, crd, hc)
			require.NotEmpty(t, errs)
			assert.Contains(t, errs.ToAggregate().Error(), tc.want)
		})
	}
}

func TestCRDBoundsTheResourceList(t *testing.T) {
	hc := valid()
	hc.Status.Resources = make([]healthv1alpha1.ResourceHealth, healthv1alpha1.MaxResources+1)
	for i := range hc.Status.Resources {
		hc.Status.Resources[i] = healthv1alpha1.ResourceHealth{APIVersion: "v1", Kind: "ConfigMap", Name: "x", Status: healthv1alpha1.StatusCurrent}
	}
	assert.Contains(t, validate(t, loadCRD(t), hc).ToAggregate().Error(), "status.resources")
}
