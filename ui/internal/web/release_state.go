package web

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	writes "github.com/sluicehq/sluice/pkg/actions"
)

// stalledMessage is why a ManifestRelease is stalled (its Stalled condition's message), or "".
func stalledMessage(mr *rollbackv1alpha1.ManifestRelease) string {
	c := meta.FindStatusCondition(mr.Status.Conditions, "Stalled")
	if c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	if c.Message == "" {
		return c.Reason
	}
	return c.Message
}

// releaseSnapshots are the kept snapshots a release can roll back to: every one but the deployed.
func releaseSnapshots(mr *rollbackv1alpha1.ManifestRelease) []option {
	var out []option
	for _, h := range writes.RollbackTargets(mr) {
		label := fmt.Sprintf("version %s, test %s", h.Version, h.Test)
		if h.RolledBack {
			label += ", rolled back"
		}
		out = append(out, option{strconv.FormatInt(h.Number, 10), label})
	}
	return out
}

// canRollBack reports whether a release has a snapshot to roll back to.
func canRollBack(mr *rollbackv1alpha1.ManifestRelease) bool { return len(releaseSnapshots(mr)) > 0 }
