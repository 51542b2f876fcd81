package kinds

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/sluicehq/sluice/gate-controller/internal/hold"
)

// Kind is a served resource the controller watches and holds.
type Kind struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	Mode       hold.Mode
}

// APIVersion is group/version, or version for the core group.
func (k Kind) APIVersion() string { return k.GVR.GroupVersion().String() }

// GroupResource identifies the kind whatever its version.
func (k Kind) GroupResource() schema.GroupResource { return k.GVR.GroupResource() }

// Resolved is what discovery found for a list of targets.
type Resolved struct {
	// Kinds are the served resources to hold, sorted by group and resource.
	Kinds []Kind
	// Missing are the targets nothing is served for yet: their CRDs are not installed.
	Missing []Target
}

// Resolve finds the served resources of targets, at their group's preferred version. A resource
// qualifies when it can be listed, watched and patched; subresources never do. A group whose
// discovery fails is reported missing rather than failing the rest.
func Resolve(disco discovery.DiscoveryInterface, targets []Target) (Resolved, error) {
	groups, lists, err := disco.ServerGroupsAndResources()
	var partial *discovery.ErrGroupDiscoveryFailed
	if err != nil && !errors.As(err, &partial) {
		return Resolved{}, fmt.Errorf("discover API resources: %w", err)
	}
	preferred := map[string]string{}
	for _, g := range groups {
		preferred[g.Name] = g.PreferredVersion.GroupVersion
	}
	served := map[string][]metav1.APIResource{}
	for _, l := range lists {
		served[l.GroupVersion] = l.APIResources
	}

	var res Resolved
	found := map[schema.GroupResource]int{}
	// Entries for one resource beat a whole group, whatever their order.
	ordered := slices.Clone(targets)
	sort.SliceStable(ordered, func(i, j int) bool {
		return ordered[i].Resource == AllResources && ordered[j].Resource != AllResources
	})
	for _, t := range ordered {
		gv, ok := preferred[t.Group]
		if !ok {
			res.Missing = append(res.Missing, t)
			continue
		}
		version, err := schema.ParseGroupVersion(gv)
		if err != nil {
			res.Missing = append(res.Missing, t)
			continue
		}
		matched := false
		for _, r := range served[gv] {
			if !qualifies(r) || (t.Resource != AllResources && r.Name != t.Resource) {
				continue
			}
			matched = true
			k := Kind{GVR: version.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced, Mode: t.Mode}
			if i, seen := found[k.GroupResource()]; seen {
				res.Kinds[i] = k
				continue
			}
			found[k.GroupResource()] = len(res.Kinds)
			res.Kinds = append(res.Kinds, k)
		}
		if !matched {
			res.Missing = append(res.Missing, t)
		}
	}
	sort.Slice(res.Kinds, func(i, j int) bool {
		a, b := res.Kinds[i].GroupResource(), res.Kinds[j].GroupResource()
		return a.Group < b.Group || (a.Group == b.Group && a.Resource < b.Resource)
	})
	return res, nil
}

func qualifies(r metav1.APIResource) bool {
	if strings.Contains(r.Name, "/") {
		return false
	}
	for _, verb := range []string{"list", "watch", "patch"} {
		if !slices.Contains(r.Verbs, verb) {
			return false
		}
	}
	return true
}

// Groups returns the API groups targets name, to tell which CRDs concern them.
func Groups(targets []Target) map[string]bool {
	groups := map[string]bool{}
	for _, t := range targets {
		groups[t.Group] = true
	}
	return groups
}
