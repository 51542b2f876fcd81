package manifestrelease

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// writeStatus applies mutate to the status and writes it. The status is this controller's
// alone, so on a conflict (someone edited the spec or metadata meanwhile) it reads the object
// again and applies the same mutation to it: an operation's result is never lost to an edit.
func (r *Reconciler) writeStatus(ctx context.Context, mr *rollbackv1.ManifestRelease, mutate func(*rollbackv1.ManifestReleaseStatus, int64)) (*rollbackv1.ManifestRelease, error) {
	client := r.Client.RollbackV1alpha1().ManifestReleases(mr.Namespace)
	current := mr
	for attempt := 0; ; attempt++ {
		next := current.DeepCopy()
		mutate(&next.Status, next.Generation)
		next.Status.ObservedGeneration = next.Generation
		suspend.Report(&next.Status.Conditions, next.Generation, suspend.Get(next, next.Spec.Suspend))
		updated, err := client.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
		if err == nil {
			return updated, nil
		}
		if !apierrors.IsConflict(err) || attempt == 4 {
			return nil, fmt.Errorf("update status of ManifestRelease %s/%s: %w", mr.Namespace, mr.Name, err)
		}
		if current, err = client.Get(ctx, mr.Name, metav1.GetOptions{}); err != nil {
			return nil, err
		}
	}
}

func toInventory(refs []manifest.Ref) []rollbackv1.InventoryEntry {
	out := make([]rollbackv1.InventoryEntry, len(refs))
	for i, r := range refs {
		out[i] = rollbackv1.InventoryEntry{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
	}
	return out
}

func fromInventory(entries []rollbackv1.InventoryEntry) []manifest.Ref {
	out := make([]manifest.Ref, len(entries))
	for i, e := range entries {
		out[i] = manifest.Ref{Group: e.Group, Version: e.Version, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}
	}
	return out
}

// union is every object of a and b, identified as pkg/manifest does, b's version winning.
func union(a, b []manifest.Ref) []manifest.Ref {
	seen := map[string]int{}
	var out []manifest.Ref
	for _, list := range [][]manifest.Ref{a, b} {
		for _, r := range list {
			if i, ok := seen[r.ID()]; ok {
				out[i] = r
				continue
			}
			seen[r.ID()] = len(out)
			out = append(out, r)
		}
	}
	return out
}

// addHistory puts entry first, replacing an entry of the same number, and bounds the list.
func addHistory(st *rollbackv1.ManifestReleaseStatus, entry rollbackv1.ReleaseHistoryEntry) {
	history := slices.DeleteFunc(slices.Clone(st.History), func(e rollbackv1.ReleaseHistoryEntry) bool {
		return e.Number == entry.Number && e.Action == entry.Action
	})
	history = append([]rollbackv1.ReleaseHistoryEntry{entry}, history...)
	if len(history) > rollbackv1.MaxReleaseHistory {
		history = history[:rollbackv1.MaxReleaseHistory]
	}
	st.History = history
}

// setTestCondition records the result of tests; NotRun leaves the last result alone.
func setTestCondition(st *rollbackv1.ManifestReleaseStatus, generation int64, result rollbackv1.TestResult, message string) {
	switch result {
	case rollbackv1.TestPassed:
		conditions.Set(&st.Conditions, generation, rollbackv1.ConditionTestSuccess, metav1.ConditionTrue, ReasonTestsPassed, message)
	case rollbackv1.TestFailed:
		conditions.Set(&st.Conditions, generation, rollbackv1.ConditionTestSuccess, metav1.ConditionFalse, ReasonTestFailed, message)
	}
}

func describe(version string, number int64) string {
	return fmt.Sprintf("%s (snapshot %d)", version, number)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
