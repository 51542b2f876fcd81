package web

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	"github.com/sluicehq/sluice/ui/internal/view"
)

func TestTheRevisionToApproveIsThatOfTheSourceTheTargetApplies(t *testing.T) {
	object := func(kind string, fields map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: fields}
		u.SetKind(kind)
		u.SetNamespace("apps")
		u.SetName("web")
		return u
	}
	ref := func(kind, name, ns string) map[string]any {
		m := map[string]any{"kind": kind, "name": name}
		if ns != "" {
			m["namespace"] = ns
		}
		return m
	}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want string // resource namespace/name, or "" for none
	}{
		{"a Kustomization's GitRepository", object("Kustomization", map[string]any{"spec": map[string]any{"sourceRef": ref("GitRepository", "repo", "")}}), "gitrepositories apps/repo"},
		{"a Kustomization's OCIRepository elsewhere", object("Kustomization", map[string]any{"spec": map[string]any{"sourceRef": ref("OCIRepository", "oci", "flux-system")}}), "ocirepositories flux-system/oci"},
		{"a HelmRelease's chartRef", object("HelmRelease", map[string]any{"spec": map[string]any{"chartRef": ref("HelmChart", "chart", "")}}), "helmcharts apps/chart"},
		{"the HelmChart helm-controller made", object("HelmRelease", map[string]any{"spec": map[string]any{"chart": map[string]any{"spec": map[string]any{"sourceRef": ref("HelmRepository", "charts", "flux-system")}}},
			"status": map[string]any{"helmChart": "flux-system/apps-web"}}), "helmcharts flux-system/apps-web"},
		{"the HelmChart it will make", object("HelmRelease", map[string]any{"spec": map[string]any{"chart": map[string]any{"spec": map[string]any{"sourceRef": ref("HelmRepository", "charts", "")}}}}), "helmcharts apps/apps-web"},
		{"a source the gate-controller does not follow", object("Kustomization", map[string]any{"spec": map[string]any{"sourceRef": ref("HelmRepository", "charts", "")}}), ""},
		{"a HelmRelease with no chart", object("HelmRelease", map[string]any{"spec": map[string]any{}}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, ok := fluxSourceOf(tc.obj)
			got := ""
			if ok {
				got = src.resource.Resource + " " + src.namespace + "/" + src.name
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

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
