package crds

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type kinds struct {
	installed, synced map[schema.GroupResource]bool
}

func (k kinds) Missing(grs ...schema.GroupResource) []schema.GroupResource {
	var out []schema.GroupResource
	for _, gr := range grs {
		if !k.installed[gr] {
			out = append(out, gr)
		}
	}
	return out
}

func (k kinds) Synced(gr schema.GroupResource) bool { return k.synced[gr] }

func TestCheckNamesTheMissingCRDsAndTheChartsThatInstallThem(t *testing.T) {
	k := kinds{installed: map[schema.GroupResource]bool{ScmProviders: true, CommitStatuses: true},
		synced: map[schema.GroupResource]bool{ScmProviders: true}}

	missing, ready := Check(k, ScmRepositories, ScmProviders, Gates)
	assert.False(t, ready)
	assert.Equal(t, "the CRDs scmrepositories.scm.sluice.dev, gates.gating.sluice.dev are not installed: "+
		"install the commitstatus-controller and gate-controller charts (replicaCount: 0 installs the CRDs alone), or the sluice chart; "+
		"they are picked up once installed, without a restart", missing)

	missing, _ = Check(k, Gates)
	assert.Contains(t, missing, "the CRD gates.gating.sluice.dev is not installed: install the gate-controller chart ")

	missing, ready = Check(k, CommitStatuses)
	assert.Empty(t, missing, "installed")
	assert.False(t, ready, "but not read yet")

	missing, ready = Check(k, ScmProviders)
	assert.Empty(t, missing)
	assert.True(t, ready)

	missing, ready = Check(nil, Gates)
	assert.Empty(t, missing)
	assert.True(t, ready, "no CRD watching: every kind is there")
}

func TestMessageNamesEveryChartOnce(t *testing.T) {
	assert.Contains(t, Message([]schema.GroupResource{CommitStatuses, Gates, ScmProviders, RevertCommits}),
		"the CRDs commitstatuses.commitstatus.sluice.dev, gates.gating.sluice.dev, scmproviders.scm.sluice.dev, revertcommits.rollback.sluice.dev are not installed: "+
			"install the commitstatus-controller, gate-controller and rollback-controller charts (")
}
