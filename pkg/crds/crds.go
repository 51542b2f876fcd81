// Package crds is the one table of Sluice's CRDs: each kind, and the chart that installs it. A
// controller that reads kinds another chart installs names them from here, asks Check whether
// they can be read, and says with Message which are missing and which chart to install; the web
// UI reads the same table. Their informers run under crdwatch.Kinds: each starts once its CRD is
// installed, so a missing CRD is reported on the objects that need it instead of keeping the
// controller from becoming ready.
package crds

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A CRD is one Sluice kind and the chart that installs it.
type CRD struct {
	schema.GroupResource
	Kind    string
	Version string
	// Chart is the Helm chart whose crds.enabled installs it (the sluice chart installs all).
	Chart string
}

// GroupVersionResource is the resource to list and watch.
func (c CRD) GroupVersionResource() schema.GroupVersionResource { return c.WithVersion(c.Version) }

// The kinds one controller reads and another chart installs.
var (
	ScmRepositories     = schema.GroupResource{Group: "scm.sluice.dev", Resource: "scmrepositories"}
	ScmProviders        = schema.GroupResource{Group: "scm.sluice.dev", Resource: "scmproviders"}
	CommitStatuses      = schema.GroupResource{Group: "commitstatus.sluice.dev", Resource: "commitstatuses"}
	Gates               = schema.GroupResource{Group: "gating.sluice.dev", Resource: "gates"}
	RevertCommits       = schema.GroupResource{Group: "rollback.sluice.dev", Resource: "revertcommits"}
	PromotionStrategies = schema.GroupResource{Group: "promoter.sluice.dev", Resource: "promotionstrategies"}
	PullRequests        = schema.GroupResource{Group: "promoter.sluice.dev", Resource: "pullrequests"}
)

// Table is every Sluice CRD, by chart (TestTableIsWhatEachChartInstalls keeps it true).
var Table = []CRD{
	{CommitStatuses, "CommitStatus", "v1alpha1", "commitstatus-controller"},
	{ScmProviders, "ScmProvider", "v1alpha1", "commitstatus-controller"},
	{ScmRepositories, "ScmRepository", "v1alpha1", "commitstatus-controller"},
	{Gates, "Gate", "v1alpha1", "gate-controller"},
	{schema.GroupResource{Group: "health.sluice.dev", Resource: "healthchecks"}, "HealthCheck", "v1alpha1", "health-controller"},
	{PromotionStrategies, "PromotionStrategy", "v1alpha1", "promoter-controller"},
	{schema.GroupResource{Group: "promoter.sluice.dev", Resource: "proposedcommits"}, "ProposedCommit", "v1alpha1", "promoter-controller"},
	{PullRequests, "PullRequest", "v1alpha1", "promoter-controller"},
	{schema.GroupResource{Group: "rollback.sluice.dev", Resource: "manifestreleases"}, "ManifestRelease", "v1alpha1", "rollback-controller"},
	{RevertCommits, "RevertCommit", "v1alpha1", "rollback-controller"},
	{schema.GroupResource{Group: "rollback.sluice.dev", Resource: "rollbackpolicies"}, "RollbackPolicy", "v1alpha1", "rollback-controller"},
}

// Of returns the table's row for gr.
func Of(gr schema.GroupResource) (CRD, bool) {
	i := slices.IndexFunc(Table, func(c CRD) bool { return c.GroupResource == gr })
	if i < 0 {
		return CRD{}, false
	}
	return Table[i], true
}

// SCM are the kinds every promotion needs: the repository and its provider.
var SCM = []schema.GroupResource{ScmRepositories, ScmProviders}

// ReasonCRDMissing is the Stalled reason of an object that needs a kind whose CRD is not
// installed, and of the Warning Event that announces it.
const ReasonCRDMissing = "CRDMissing"

// Kinds is what a reconciler asks of crdwatch.Kinds.
type Kinds interface {
	Missing(grs ...schema.GroupResource) []schema.GroupResource
	Synced(gr schema.GroupResource) bool
}

// Check tells whether the kinds needed can be read. missing names the CRDs that are not
// installed and the charts that install them ("" when all are); ready is true when every kind
// needed is installed and its cache synced. A nil k has every kind (tests that run without CRD
// watching).
func Check(k Kinds, needed ...schema.GroupResource) (missing string, ready bool) {
	if k == nil {
		return "", true
	}
	if gone := k.Missing(needed...); len(gone) > 0 {
		return Message(gone), false
	}
	for _, gr := range needed {
		if !k.Synced(gr) {
			return "", false
		}
	}
	return "", true
}

// Message says which CRDs are missing and how to install them.
func Message(missing []schema.GroupResource) string {
	names := make([]string, len(missing))
	var charts []string
	for i, gr := range missing {
		names[i] = gr.String()
		if c, ok := Of(gr); ok && !slices.Contains(charts, c.Chart) {
			charts = append(charts, c.Chart)
		}
	}
	what, chart := "the CRD %s is", "chart"
	if len(names) > 1 {
		what = "the CRDs %s are"
	}
	if len(charts) > 1 {
		chart = "charts"
	}
	return fmt.Sprintf(what+" not installed: install the %s %s (replicaCount: 0 installs the CRDs alone), or the sluice chart; "+
		"they are picked up once installed, without a restart",
		strings.Join(names, ", "), inWords(charts), chart)
}

// inWords joins names as a sentence does: "a", "a and b", "a, b and c".
func inWords(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
