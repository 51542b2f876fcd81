package apitests

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/testenv/crdvalidate"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

func loadGateCRD(t *testing.T) *crdvalidate.CRD {
	t.Helper()
	crd, err := crdvalidate.Load("gating.sluice.dev_gates.yaml")
	require.NoError(t, err)
	return crd
}

func validateGate(t *testing.T, crd *crdvalidate.CRD, obj *gatingv1alpha1.Gate) field.ErrorList {
	t.Helper()
	errs, err := crd.Validate(obj)
	require.NoError(t, err)
	return errs
}

func gateWith(w gatingv1alpha1.GateWindow) *gatingv1alpha1.Gate {
	return &gatingv1alpha1.Gate{
		ObjectMeta: metav1.ObjectMeta{Name: "no-deploy-fridays", Namespace: "flux-system"},
		Spec:       gatingv1alpha1.GateSpec{Windows: []gatingv1alpha1.GateWindow{w}},
	}
}

func friday() gatingv1alpha1.GateWindow {
	return gatingv1alpha1.GateWindow{
		Schedule: "0 18 * * FRI", Duration: metav1.Duration{Duration: 62 * time.Hour},
		TimeZone: "Europe/London", Kind: gatingv1alpha1.StateClosed, Description: "No Deploy Friday",
	}
}

func TestCRDAcceptsAGateWithWindowsAndOverride(t *testing.T) {
	crd := loadGateCRD(t)
	g := gateWith(friday())
	g.Spec.Windows = append(g.Spec.Windows, gatingv1alpha1.GateWindow{
		Schedule: " @daily ", Duration: metav1.Duration{Duration: 90 * time.Minute}, Kind: gatingv1alpha1.StateOpen,
	})
	g.Spec.Override = &gatingv1alpha1.GateOverride{State: gatingv1alpha1.StateOpen, Until: metav1.Now(), Message: "hotfix"}
	assert.Empty(t, validateGate(t, crd, g))
}

func TestCRDRejectsBadWindows(t *testing.T) {
	crd := loadGateCRD(t)
	cases := map[string]struct {
		mutate  func(*gatingv1alpha1.GateWindow)
		errHave string
	}{
		"four fields":            {func(w *gatingv1alpha1.GateWindow) { w.Schedule = "0 18 * FRI" }, "five fields"},
		"seconds field":          {func(w *gatingv1alpha1.GateWindow) { w.Schedule = "0 0 18 * * FRI" }, "five fields"},
		"zone inside schedule":   {func(w *gatingv1alpha1.GateWindow) { w.Schedule = "CRON_TZ=UTC 0 18 * * FRI" }, "timeZone"},
		"@every":                 {func(w *gatingv1alpha1.GateWindow) { w.Schedule = "@every 1h" }, "five fields"},
		"zero duration":          {func(w *gatingv1alpha1.GateWindow) { w.Duration.Duration = 0 }, "duration must be positive"},
		"negative duration":      {func(w *gatingv1alpha1.GateWindow) { w.Duration.Duration = -time.Hour }, "duration must be positive"},
		"duration over the cap":  {func(w *gatingv1alpha1.GateWindow) { w.Duration.Duration = 8785 * time.Hour }, "at most 8784h"},
		"machine-dependent zone": {func(w *gatingv1alpha1.GateWindow) { w.TimeZone = "Local" }, "IANA"},
		"unknown kind":           {func(w *gatingv1alpha1.GateWindow) { w.Kind = "freeze" }, `"open", "closed"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := friday()
			require.Empty(t, validateGate(t, crd, gateWith(w)), "the unchanged window is valid")
			tc.mutate(&w)
			errs := validateGate(t, crd, gateWith(w))
			require.NotEmpty(t, errs)
			assert.Contains(t, errs.ToAggregate().Error(), tc.errHave)
		})
	}
}

func TestCRDBoundsStatusLists(t *testing.T) {
	crd := loadGateCRD(t)
	g := gateWith(friday())
	g.Status.Held = make([]gatingv1alpha1.HeldObject, gatingv1alpha1.MaxHeld+1)
	for i := range g.Status.Held {
		g.Status.Held[i] = gatingv1alpha1.HeldObject{APIVersion: "v1", Kind: "ConfigMap", Name: "x"}
	}
	g.Status.History = make([]gatingv1alpha1.GateTransition, gatingv1alpha1.MaxHistory+1)
	for i := range g.Status.History {
		g.Status.History[i] = gatingv1alpha1.GateTransition{Time: metav1.Now(), State: gatingv1alpha1.StateOpen, Reason: gatingv1alpha1.ReasonDefault}
	}
	errs := validateGate(t, crd, g).ToAggregate().Error()
	assert.Contains(t, errs, "status.held")
	assert.Contains(t, errs, "status.history")
}
