package actions

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rollbackclient "github.com/sluicehq/sluice/api/generated/clientset/versioned/typed/rollback/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// RollbackTargets are the kept snapshots a ManifestRelease can roll back to: its history, newest
// first, except the deployed version.
func RollbackTargets(mr *rollbackv1alpha1.ManifestRelease) []rollbackv1alpha1.ReleaseHistoryEntry {
	var out []rollbackv1alpha1.ReleaseHistoryEntry
	for _, h := range mr.Status.History {
		if h.Number != mr.Status.UpgradeNumber {
			out = append(out, h)
		}
	}
	return out
}

// CheckRollback says, in words a person can act on, why mr cannot roll back to snapshot number;
// nil if it can.
func CheckRollback(mr *rollbackv1alpha1.ManifestRelease, number int64) error {
	if number == mr.Status.UpgradeNumber && number != 0 {
		return fmt.Errorf("snapshot %d is what ManifestRelease %s/%s runs now", number, mr.Namespace, mr.Name)
	}
	var kept []string
	for _, h := range RollbackTargets(mr) {
		if h.Number == number {
			return nil
		}
		kept = append(kept, strconv.FormatInt(h.Number, 10))
	}
	if len(kept) == 0 {
		return fmt.Errorf("ManifestRelease %s/%s keeps no earlier snapshot to roll back to", mr.Namespace, mr.Name)
	}
	return fmt.Errorf("ManifestRelease %s/%s keeps no snapshot %d to roll back to; choose one of: %s", mr.Namespace, mr.Name, number, strings.Join(kept, ", "))
}

// RollBack sets the annotation the rollback-controller acts on once: it applies snapshot number
// of the release name.
func RollBack(ctx context.Context, releases rollbackclient.ManifestReleaseInterface, name string, number int64, fieldManager string) (*rollbackv1alpha1.ManifestRelease, error) {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, rollbackv1alpha1.RollbackToAnnotation, strconv.FormatInt(number, 10))
	return releases.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: fieldManager})
}
