package web

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// The rollbacks page says why a release is stalled, and offers "Roll back…" only when a kept
// snapshot other than the deployed one exists.
func TestTheRollbacksPageShowsWhyAReleaseStallsAndOffersOnlyRealRollbacks(t *testing.T) {
	pages, err := parsePages()
	require.NoError(t, err)
	stalled := &rollbackv1alpha1.ManifestRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "first"},
		Status: rollbackv1alpha1.ManifestReleaseStatus{Conditions: []metav1.Condition{{Type: "Stalled", Status: metav1.ConditionTrue,
			Reason: "InstallFailed", Message: `applying Deployment team/web: admission webhook denied it`}}}}
	kept := &rollbackv1alpha1.ManifestRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "second"},
		Status: rollbackv1alpha1.ManifestReleaseStatus{UpgradeNumber: 2, History: []rollbackv1alpha1.ReleaseHistoryEntry{{Number: 1, Version: "1.0"}, {Number: 2, Version: "1.1"}}}}
	may := true
	render := func(releases ...*rollbackv1alpha1.ManifestRelease) string {
		var buf bytes.Buffer
		require.NoError(t, pages["rollbacks"].ExecuteTemplate(&buf, "layout", page{Title: "Rollbacks", Now: time.Now(), CanAct: true,
			may: func(string, string, string, string) bool { return may }, Data: rollbacksData{Releases: releases}}))
		return buf.String()
	}

	page := render(stalled)
	assert.Contains(t, page, "Stalled: applying Deployment team/web: admission webhook denied it")
	assert.NotContains(t, page, "/act/rollback/team/first", "no snapshot to roll back to")

	page = render(kept)
	assert.Contains(t, page, `href="/act/rollback/team/second"`)
	assert.NotContains(t, page, "Stalled:")
	assert.Equal(t, []option{{"1", "version 1.0, test "}}, releaseSnapshots(kept))
	may = false
	assert.NotContains(t, render(kept), "/act/rollback/", "not offered to whom RBAC refuses it")
}
