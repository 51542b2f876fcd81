package web

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/ui/internal/view"
)

// TestOnlyATargetWhoseRevisionAGateApprovesOffersApproval: a held Kustomization and a held
// HelmRelease offer "Approve this revision…"; a held Argo CD Application, whose revision the
// gate-controller does not approve, does not.
func TestOnlyATargetWhoseRevisionAGateApprovesOffersApproval(t *testing.T) {
	pages, err := parsePages()
	require.NoError(t, err)
	gate := &gatingv1alpha1.Gate{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "freeze"}}
	held := func(kind, name string) view.Target {
		return view.Target{Kind: kind, Namespace: "team", Name: name, Held: true, Suspended: true, Reason: "held by team/freeze"}
	}
	data := gatesData{Gates: []*gatingv1alpha1.Gate{gate}, One: true,
		Targets: []view.Target{held("Application", "web-app"), held("HelmRelease", "web-chart"), held("Kustomization", "web-apps")}}
	var buf bytes.Buffer
	mayAll := func(string, string, string, string) bool { return true }
	require.NoError(t, pages["gates"].ExecuteTemplate(&buf, "layout", page{Title: "gate", Now: time.Now(), CanAct: true, may: mayAll, Data: data}))
	assert.Contains(t, buf.String(), `?target=Kustomization/team/web-apps">Approve this revision`)
	assert.Contains(t, buf.String(), `?target=HelmRelease/team/web-chart">Approve this revision`)
	assert.NotContains(t, buf.String(), `?target=Application/`)
	assert.Equal(t, 2, bytes.Count(buf.Bytes(), []byte("Approve this revision")))
}
