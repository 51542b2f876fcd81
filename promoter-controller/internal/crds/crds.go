// Package crds names the kinds of other Sluice charts that the promoter reads, and says which of
// their CRDs are missing in words a person can act on. Their informers run under
// crdwatch.Kinds: each starts once its CRD is installed, so a missing CRD is reported on the
// objects that need it instead of keeping the controller from becoming ready.
package crds

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The kinds the promoter reads but does not own.
var (
	ScmRepositories = schema.GroupResource{Group: "scm.sluice.dev", Resource: "scmrepositories"}
	ScmProviders    = schema.GroupResource{Group: "scm.sluice.dev", Resource: "scmproviders"}
	CommitStatuses  = schema.GroupResource{Group: "commitstatus.sluice.dev", Resource: "commitstatuses"}
	Gates           = schema.GroupResource{Group: "gating.sluice.dev", Resource: "gates"}
	RevertCommits   = schema.GroupResource{Group: "rollback.sluice.dev", Resource: "revertcommits"}
)

// SCM are the kinds every promotion needs: the repository and its provider.
var SCM = []schema.GroupResource{ScmRepositories, ScmProviders}

// ReasonCRDMissing is the Stalled reason of an object that needs a kind whose CRD is not
// installed, and of the Warning Event that announces it.
const ReasonCRDMissing = "CRDMissing"

// owners are the charts that install each group's CRDs.
var owners = map[string]string{
	"scm.sluice.dev":          "commitstatus-controller",
	"commitstatus.sluice.dev": "commitstatus-controller",
	"gating.sluice.dev":       "gate-controller",
	"rollback.sluice.dev":     "rollback-controller",
}

// Kinds is what the reconcilers ask of crdwatch.Kinds.
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
		if c := owners[gr.Group]; c != "" && !slices.Contains(charts, c) {
			charts = append(charts, c)
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
