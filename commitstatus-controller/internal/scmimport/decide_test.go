package scmimport

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm"
)

const (
	shaA = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
	shaB = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"
)

func read(sha string, src scm.StatusSource, name string, state scm.StatusState, desc, url string) scm.ReadStatus {
	return scm.ReadStatus{Source: src, CommitStatus: scm.CommitStatus{SHA: sha, Name: name, State: state, Description: desc, TargetURL: url}}
}

func observed(mutate func(*Observed)) Observed {
	o := Observed{Namespace: "team", Strategy: "app", UID: "uid-1", Repository: "repo", SHAs: []string{shaA, shaB},
		Read: map[string][]scm.ReadStatus{}, Local: map[[2]string]bool{}}
	mutate(&o)
	return o
}

func names(objs []*commitstatusv1alpha1.CommitStatus) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Name)
	}
	return out
}

func TestTrackedSHAsAreTheProposedAndActiveCommits(t *testing.T) {
	ps := &promoterv1alpha1.PromotionStrategy{Status: promoterv1alpha1.PromotionStrategyStatus{Environments: []promoterv1alpha1.EnvironmentStatus{
		{Branch: "staging", Active: promoterv1alpha1.CommitState{HydratedSHA: shaB}, Proposed: promoterv1alpha1.CommitState{HydratedSHA: shaA}},
		{Branch: "prod", Active: promoterv1alpha1.CommitState{HydratedSHA: shaA}, Proposed: promoterv1alpha1.CommitState{HydratedSHA: "not-a-sha"}},
	}}}
	assert.Equal(t, []string{shaA, shaB}, TrackedSHAs(ps))
}

func TestAnImportedStatusCarriesItsKeyOwnerAndVerdict(t *testing.T) {
	plan := Decide(observed(func(o *Observed) {
		o.Read[shaA] = []scm.ReadStatus{read(shaA, scm.SourceCheckRun, "ci/kubeconform", scm.StatusFailure, "2 invalid manifests", "https://ci.example.com/1")}
	}))
	assert.Empty(t, plan.Update)
	assert.Empty(t, plan.Delete)
	if assert.Len(t, plan.Create, 1) {
		cs := plan.Create[0]
		assert.Equal(t, "team", cs.Namespace)
		assert.Equal(t, ObjectName("app", shaA, scm.SourceCheckRun, "ci/kubeconform"), cs.Name)
		assert.Equal(t, "ci-kubeconform", cs.Labels[commitstatusv1alpha1.KeyLabel])
		assert.Equal(t, "true", cs.Labels[commitstatusv1alpha1.ImportedLabel])
		assert.Equal(t, "check-run", cs.Annotations[commitstatusv1alpha1.SourceAnnotation])
		assert.Equal(t, commitstatusv1alpha1.CommitStatusSpec{
			RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: "repo"}, SHA: shaA, Name: "ci/kubeconform",
			Description: "2 invalid manifests", Phase: commitstatusv1alpha1.CommitStatusFailure, URL: "https://ci.example.com/1",
		}, cs.Spec)
		assert.Equal(t, "PromotionStrategy", cs.OwnerReferences[0].Kind)
		assert.Equal(t, "uid-1", string(cs.OwnerReferences[0].UID))
		assert.False(t, *cs.OwnerReferences[0].BlockOwnerDeletion, "no finalizer permission is needed on strategies")
	}
}

// decideCase is what observe read, and the writes Decide must plan for it.
type decideCase struct {
	name                   string
	mutate                 func(*Observed)
	create, update, delete []string
}

// decideCases are the imports Decide meets: new, changed, gone, and names it cannot key.
func decideCases() []decideCase {
	existing := func(sha, name string, phase commitstatusv1alpha1.CommitStatusPhase) *commitstatusv1alpha1.CommitStatus {
		o := observed(func(o *Observed) {})
		cs := desiredObject(o, read(sha, scm.SourceStatus, name, scm.StatusState(phase), "", ""))
		cs.ResourceVersion = "7"
		return cs
	}
	return []decideCase{
		{
			name: "a status mirrored from this cluster is not imported again",
			mutate: func(o *Observed) {
				o.Read[shaA] = []scm.ReadStatus{read(shaA, scm.SourceStatus, "health-staging", scm.StatusSuccess, "", "")}
				o.Local[[2]string{shaA, "health-staging"}] = true
			},
		},
		{
			name: "the same verdict writes nothing",
			mutate: func(o *Observed) {
				o.Read[shaA] = []scm.ReadStatus{read(shaA, scm.SourceStatus, "lint", scm.StatusSuccess, "", "")}
				o.Existing = []*commitstatusv1alpha1.CommitStatus{existing(shaA, "lint", commitstatusv1alpha1.CommitStatusSuccess)}
			},
		},
		{
			name: "a new verdict updates the object",
			mutate: func(o *Observed) {
				o.Read[shaA] = []scm.ReadStatus{read(shaA, scm.SourceStatus, "lint", scm.StatusFailure, "", "")}
				o.Existing = []*commitstatusv1alpha1.CommitStatus{existing(shaA, "lint", commitstatusv1alpha1.CommitStatusSuccess)}
			},
			update: []string{ObjectName("app", shaA, scm.SourceStatus, "lint")},
		},
		{
			name: "a commit no longer tracked loses its imports",
			mutate: func(o *Observed) {
				o.SHAs = []string{shaB}
				o.Existing = []*commitstatusv1alpha1.CommitStatus{existing(shaA, "lint", commitstatusv1alpha1.CommitStatusSuccess)}
			},
			delete: []string{ObjectName("app", shaA, scm.SourceStatus, "lint")},
		},
		{
			name: "a commit whose read failed keeps its imports",
			mutate: func(o *Observed) {
				o.Existing = []*commitstatusv1alpha1.CommitStatus{existing(shaA, "lint", commitstatusv1alpha1.CommitStatusFailure)}
			},
		},
		{
			name: "a status the SCM no longer holds goes",
			mutate: func(o *Observed) {
				o.Read[shaA] = nil
				o.Existing = []*commitstatusv1alpha1.CommitStatus{existing(shaA, "lint", commitstatusv1alpha1.CommitStatusFailure)}
			},
			delete: []string{ObjectName("app", shaA, scm.SourceStatus, "lint")},
		},
		{
			name: "a name with no letter or digit has no key and is skipped",
			mutate: func(o *Observed) {
				o.Read[shaA] = []scm.ReadStatus{read(shaA, scm.SourceStatus, "???", scm.StatusFailure, "", "")}
			},
		},
		{
			name: "a status and a check run of the same name are two objects",
			mutate: func(o *Observed) {
				o.Read[shaB] = []scm.ReadStatus{
					read(shaB, scm.SourceStatus, "test", scm.StatusSuccess, "", ""),
					read(shaB, scm.SourceCheckRun, "test", scm.StatusFailure, "", ""),
				}
			},
			create: sorted(ObjectName("app", shaB, scm.SourceStatus, "test"), ObjectName("app", shaB, scm.SourceCheckRun, "test")),
		},
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range decideCases() {
		t.Run(tc.name, func(t *testing.T) {
			plan := Decide(observed(tc.mutate))
			assert.Equal(t, tc.create, names(plan.Create))
			assert.Equal(t, tc.update, names(plan.Update))
			assert.Equal(t, tc.delete, plan.Delete)
		})
	}
}

func TestOnlyHTTPLinksAreKept(t *testing.T) {
	assert.Equal(t, "https://ci.example.com/1", webURL("https://ci.example.com/1"))
	assert.Empty(t, webURL("javascript:alert(1)"))
	assert.Empty(t, webURL("/relative/path"))
	assert.Empty(t, webURL("ftp://x.example.com"))
}

func TestAnUpdateKeepsTheObjectsIdentity(t *testing.T) {
	o := observed(func(o *Observed) {
		o.Read[shaA] = []scm.ReadStatus{read(shaA, scm.SourceStatus, "lint", scm.StatusFailure, "broken", "")}
	})
	cur := desiredObject(o, read(shaA, scm.SourceStatus, "lint", scm.StatusPending, "", ""))
	cur.ResourceVersion, cur.UID = "42", "obj-uid"
	cur.CreationTimestamp = metav1.Now()
	o.Existing = []*commitstatusv1alpha1.CommitStatus{cur}
	plan := Decide(o)
	if assert.Len(t, plan.Update, 1) {
		assert.Equal(t, "42", plan.Update[0].ResourceVersion, "an update is guarded by the version read")
		assert.Equal(t, commitstatusv1alpha1.CommitStatusFailure, plan.Update[0].Spec.Phase)
		assert.Equal(t, "broken", plan.Update[0].Spec.Description)
	}
}

func sorted(a, b string) []string {
	if a > b {
		return []string{b, a}
	}
	return []string{a, b}
}

func TestAnImportCarriesTheStrategysShardLabelsOnly(t *testing.T) {
	strategyLabels := map[string]string{"sluice.dev/shard": "a", "app.kubernetes.io/instance": "team-apps"}
	o := observed(func(o *Observed) {
		o.ShardLabels = ShardLabels(strategyLabels, []string{"sluice.dev/shard", "tier"})
		o.Read[shaA] = []scm.ReadStatus{read(shaA, scm.SourceStatus, "lint", scm.StatusFailure, "", "")}
	})
	plan := Decide(o)
	if assert.Len(t, plan.Create, 1) {
		assert.Equal(t, map[string]string{
			"sluice.dev/shard":                 "a",
			commitstatusv1alpha1.KeyLabel:      "lint",
			commitstatusv1alpha1.ImportedLabel: "true",
		}, plan.Create[0].Labels, "the selector's keys the strategy has, and no other label of the strategy (an Argo CD tracking label would have Argo CD prune it)")
	}
}

func TestAStrategyMovingShardsRelabelsItsImports(t *testing.T) {
	o := observed(func(o *Observed) {
		o.ShardLabels = map[string]string{"sluice.dev/shard": "a"}
		o.Read[shaA] = []scm.ReadStatus{read(shaA, scm.SourceStatus, "lint", scm.StatusFailure, "", "")}
	})
	cur := desiredObject(o, o.Read[shaA][0])
	o.Existing = []*commitstatusv1alpha1.CommitStatus{cur}
	assert.True(t, Decide(o).Empty(), "the same shard writes nothing")

	o.ShardLabels = map[string]string{"sluice.dev/shard": "b"}
	plan := Decide(o)
	if assert.Len(t, plan.Update, 1) {
		assert.Equal(t, "b", plan.Update[0].Labels["sluice.dev/shard"])
	}

	o.ShardLabels = map[string]string{}
	plan = Decide(o)
	if assert.Len(t, plan.Update, 1, "a shard label the strategy dropped goes") {
		assert.NotContains(t, plan.Update[0].Labels, "sluice.dev/shard")
		assert.Equal(t, "true", plan.Update[0].Labels[commitstatusv1alpha1.ImportedLabel])
	}
}
