package crds

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
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

// The table says what each chart's crds.enabled installs: every file in charts/*/files/crds is in
// it with its chart, and nothing else is.
func TestTableIsWhatEachChartInstalls(t *testing.T) {
	files, err := filepath.Glob("../../charts/*/files/crds/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var want, have []string
	for _, f := range files {
		chart := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(f))))
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var crd struct {
			Spec struct {
				Group    string
				Names    struct{ Kind, Plural string }
				Versions []struct{ Name string }
			}
		}
		require.NoError(t, yaml.Unmarshal(raw, &crd), f)
		s := crd.Spec
		require.Len(t, s.Versions, 1, f)
		want = append(want, fmt.Sprintf("%s.%s %s %s %s", s.Names.Plural, s.Group, s.Names.Kind, s.Versions[0].Name, chart))
	}
	for _, c := range Table {
		have = append(have, fmt.Sprintf("%s %s %s %s", c.GroupResource, c.Kind, c.Version, c.Chart))
	}
	assert.ElementsMatch(t, want, have)
}
