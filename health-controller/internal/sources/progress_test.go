package sources

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const other = "fedcba9876543210fedcba9876543210fedcba98"

// The Kustomization statuses kustomize-controller v1.9.6 writes through one apply of a new
// revision, and after it: only the last two are settled.
func TestKustomizationUnsettled(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		revision  string
		settled   bool
	}{{
		name: "fetching: lastAttemptedRevision not moved yet, objects untouched",
		doc: `{metadata: {name: apps, namespace: f, generation: 1}, status: {observedGeneration: 1, lastAppliedRevision: "main@sha1:` + sha + `",
			lastAttemptedRevision: "main@sha1:` + sha + `", conditions: [{type: Ready, status: Unknown, reason: Progressing}]}}`,
		settled: true,
	}, {
		name: "applying or health-checking a new revision: lastAttemptedRevision moved, lastAppliedRevision not",
		doc: `{metadata: {name: apps, namespace: f, generation: 1}, status: {observedGeneration: 1, lastAppliedRevision: "main@sha1:` + sha + `",
			lastAttemptedRevision: "main@sha1:` + other + `", conditions: [{type: Ready, status: Unknown, reason: Progressing}]}}`,
		revision: "main@sha1:" + other,
	}, {
		name: "the new revision failed Flux's health checks: its objects are live, lastAppliedRevision never moved",
		doc: `{metadata: {name: apps, namespace: f, generation: 1}, status: {observedGeneration: 1, lastAppliedRevision: "main@sha1:` + sha + `",
			lastAttemptedRevision: "main@sha1:` + other + `", conditions: [{type: Ready, status: "False", reason: HealthCheckFailed}]}}`,
		revision: "main@sha1:" + other,
	}, {
		name: "a new spec not applied yet",
		doc: `{metadata: {name: apps, namespace: f, generation: 2}, status: {observedGeneration: 1, lastAppliedRevision: "main@sha1:` + sha + `",
			lastAttemptedRevision: "main@sha1:` + sha + `"}}`,
		revision: "main@sha1:" + sha,
	}, {
		name: "applied: both revisions agree, the generation is observed",
		doc: `{metadata: {name: apps, namespace: f, generation: 2}, status: {observedGeneration: 2, lastAppliedRevision: "main@sha1:` + other + `",
			lastAttemptedRevision: "main@sha1:` + other + `", conditions: [{type: Ready, status: "True", reason: ReconciliationSucceeded}]}}`,
		settled: true,
	}} {
		t.Run(c.name, func(t *testing.T) {
			u := KustomizationUnsettled(object(t, c.doc))
			assert.Equal(t, c.settled, u.Settled(), u.Reason)
			if !c.settled {
				assert.Equal(t, c.revision, u.Revision)
				assert.NotEmpty(t, u.Reason)
			}
		})
	}
}

// Argo CD moves status.sync.revision when it sees a commit, before it syncs it.
func TestApplicationUnsettled(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		revision  string
		settled   bool
	}{{
		name: "a new commit seen, not synced yet",
		doc: `{metadata: {name: g, namespace: a}, status: {sync: {status: OutOfSync, revision: ` + other + `},
			operationState: {phase: Succeeded, syncResult: {revision: ` + sha + `}}}}`,
		revision: other,
	}, {
		name: "syncing",
		doc: `{metadata: {name: g, namespace: a}, status: {sync: {status: OutOfSync, revision: ` + other + `},
			operationState: {phase: Running, syncResult: {revision: ` + other + `}}}}`,
		revision: other,
	}, {
		name:     "out of sync with the same revision",
		doc:      `{metadata: {name: g, namespace: a}, status: {sync: {status: OutOfSync, revision: ` + sha + `}, operationState: {phase: Succeeded, syncResult: {revision: ` + sha + `}}}}`,
		revision: sha,
	}, {
		name:    "synced",
		doc:     `{metadata: {name: g, namespace: a}, status: {sync: {status: Synced, revision: ` + other + `}, operationState: {phase: Succeeded, syncResult: {revision: ` + other + `}}}}`,
		settled: true,
	}, {
		name:    "synced, no operation recorded",
		doc:     `{metadata: {name: g, namespace: a}, status: {sync: {status: Synced, revision: ` + sha + `}}}`,
		settled: true,
	}} {
		t.Run(c.name, func(t *testing.T) {
			u := ApplicationUnsettled(object(t, c.doc))
			assert.Equal(t, c.settled, u.Settled(), u.Reason)
			if !c.settled {
				assert.Equal(t, c.revision, u.Revision)
				assert.NotEmpty(t, u.Reason)
			}
		})
	}
}
