package apitests

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// nameOwner is a resource that answers to a name on the command line.
type nameOwner struct {
	group, resource string
}

func (o nameOwner) String() string { return o.resource + "." + o.group }

// TestSluiceNamesShadowNoBuiltinOrFluxName installs the real Flux CRDs beside Sluice's and checks
// every name kubectl resolves a Sluice kind by (plural, singular and short names) against the
// names of every built-in resource and every Flux kind. A clash would make `kubectl get NAME` or
// `kubectl explain NAME` answer with the wrong kind, as `gitrepositories` once did for Flux users.
func TestSluiceNamesShadowNoBuiltinOrFluxName(t *testing.T) {
	paths, err := flux.CRDPaths()
	require.NoError(t, err)
	env, err := testenv.Start(testenv.Options{CRDPaths: paths})
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	})
	_, lists, err := env.Kube.Discovery().ServerGroupsAndResources()
	require.NoError(t, err)

	sluiceNames := map[string][]nameOwner{}
	otherNames := map[string][]nameOwner{}
	var fluxKinds int
	for _, list := range lists {
		gv, err := parseGroupVersion(list.GroupVersion)
		require.NoError(t, err)
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			owner := nameOwner{group: gv, resource: r.Name}
			names := append([]string{r.Name, r.SingularName, strings.ToLower(r.Kind)}, r.ShortNames...)
			into := otherNames
			switch {
			case strings.HasSuffix(gv, ".sluice.dev"):
				into = sluiceNames
			case strings.HasSuffix(gv, ".fluxcd.io"):
				fluxKinds++
			}
			for _, n := range names {
				if n != "" && !contains(into[n], owner) {
					into[n] = append(into[n], owner)
				}
			}
		}
	}
	require.NotEmpty(t, sluiceNames, "the Sluice CRDs are served")
	require.Positive(t, fluxKinds, "the Flux CRDs are served")
	require.Contains(t, otherNames, "priorityclasses", "the built-in resources are served")

	var clashes []string
	for name, owners := range sluiceNames {
		if others, ok := otherNames[name]; ok {
			clashes = append(clashes, fmt.Sprintf("%q names %v and %v", name, owners, others))
		}
		if len(owners) > 1 {
			clashes = append(clashes, fmt.Sprintf("%q names several Sluice kinds: %v", name, owners))
		}
	}
	sort.Strings(clashes)
	assert.Empty(t, clashes, "rename the Sluice names that shadow another resource")

	// The names issue 10 found clashing are the other kinds' now.
	for name, want := range map[string]string{"hc": "helmcharts", "pc": "priorityclasses", "gitrepositories": "gitrepositories", "gitrepository": "gitrepositories"} {
		for _, o := range otherNames[name] {
			assert.Equal(t, want, o.resource, name)
		}
		assert.NotContains(t, sluiceNames, name)
	}
}

func parseGroupVersion(s string) (string, error) {
	gv, err := schema.ParseGroupVersion(s)
	if err != nil {
		return "", err
	}
	if gv.Group == "" {
		return "core", nil
	}
	return gv.Group, nil
}

func contains(owners []nameOwner, o nameOwner) bool {
	for _, x := range owners {
		if x == o {
			return true
		}
	}
	return false
}
