package sources

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Unsettled says the live objects may not yet be those of the revision a source reports: it is
// applying another revision, or a new spec, and has not finished. Revision is the revision being
// applied (the one the objects are moving to) and Reason says so to a person. The zero value is
// a settled source, whose objects are those of its reported revision.
type Unsettled struct {
	Revision, Reason string
}

// Settled says whether the source finished what it was applying.
func (u Unsettled) Settled() bool { return u.Reason == "" }

// KustomizationUnsettled reads whether kustomize-controller has finished applying. It writes
// status.lastAttemptedRevision before it applies a revision's objects, and lastAppliedRevision
// only once they are applied and have passed its health checks; status.observedGeneration moves
// only once a generation of the spec is applied. In between, the objects may already be the new
// revision's while lastAppliedRevision still names the previous one.
func KustomizationUnsettled(ks *unstructured.Unstructured) Unsettled {
	applied, _, _ := unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
	attempted, _, _ := unstructured.NestedString(ks.Object, "status", "lastAttemptedRevision")
	if attempted != "" && attempted != applied {
		return Unsettled{Revision: attempted, Reason: fmt.Sprintf(
			"kustomize-controller has not finished applying revision %s (status.lastAttemptedRevision); status.lastAppliedRevision is still %s",
			attempted, applied)}
	}
	generation, observed := integer(ks.Object, "metadata", "generation"), integer(ks.Object, "status", "observedGeneration")
	if observed != generation {
		return Unsettled{Revision: applied, Reason: fmt.Sprintf(
			"kustomize-controller has not finished applying generation %d of the Kustomization (status.observedGeneration is %d)",
			generation, observed)}
	}
	return Unsettled{}
}

// ApplicationUnsettled reads whether Argo CD has finished syncing the revision it reports.
// status.sync.revision is the revision Argo CD compares the live objects with, and moves as soon
// as it sees a new commit; the objects are that revision's only once a sync of it has finished
// (status.operationState) and the comparison says Synced.
func ApplicationUnsettled(app *unstructured.Unstructured) Unsettled {
	target, _, _ := ApplicationRevision(app)
	phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
	synced, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "syncResult", "revision")
	sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
	switch {
	case phase == "Running" || phase == "Terminating":
		if synced == "" {
			synced = target
		}
		return Unsettled{Revision: synced, Reason: fmt.Sprintf("Argo CD is syncing revision %s (status.operationState.phase is %s)", synced, phase)}
	case synced != "" && synced != target:
		return Unsettled{Revision: target, Reason: fmt.Sprintf(
			"Argo CD has not synced revision %s (status.sync.revision) yet; its last sync was of %s (status.operationState.syncResult.revision)", target, synced)}
	case sync == "OutOfSync":
		return Unsettled{Revision: target, Reason: fmt.Sprintf("the live objects are OutOfSync with revision %s (status.sync.status)", target)}
	}
	return Unsettled{}
}

// integer reads a whole number as the API server's decoder (int64) or a JSON decoder (float64)
// holds it; zero when absent.
func integer(obj map[string]any, fields ...string) int64 {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, fields...)
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}
