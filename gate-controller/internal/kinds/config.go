// Package kinds says which kinds of objects the gate-controller holds and how, and finds them on
// the API server: a kind whose CRD is not installed is skipped until it is.
package kinds

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sluicehq/sluice/gate-controller/internal/hold"
)

// AllResources in a Target's Resource means every resource of its group.
const AllResources = "*"

// Target is one entry of --targets: resources to hold and the mode to hold them by.
type Target struct {
	Group    string
	Resource string // a plural resource name, or AllResources
	Mode     hold.Mode
}

// String is the flag form, RESOURCE.GROUP=MODE.
func (t Target) String() string {
	return schema.GroupResource{Group: t.Group, Resource: t.Resource}.String() + "=" + string(t.Mode)
}

// Defaults hold Flux's sources, Kustomizations, HelmReleases and image update automations by
// spec.suspend and the annotation (Flux honours only the field today, the annotation says why),
// Argo CD Applications by spec.syncPolicy.automated.enabled: false and the annotation (see
// hold.ArgoCDAutomatedSync), and every Sluice kind by the annotation, which they all honour.
func Defaults() []Target {
	var targets []Target
	for _, r := range []string{"gitrepositories", "ocirepositories", "helmrepositories", "buckets", "helmcharts"} {
		targets = append(targets, Target{Group: "source.toolkit.fluxcd.io", Resource: r, Mode: hold.ModeBoth})
	}
	targets = append(targets,
		Target{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations", Mode: hold.ModeBoth},
		Target{Group: "helm.toolkit.fluxcd.io", Resource: "helmreleases", Mode: hold.ModeBoth},
		Target{Group: "image.toolkit.fluxcd.io", Resource: "imageupdateautomations", Mode: hold.ModeBoth},
		Target{Group: hold.ArgoCDApplications.Group, Resource: "applications", Mode: hold.ModeBoth},
	)
	for _, g := range SluiceGroups {
		for _, r := range SluiceResources[g] {
			targets = append(targets, Target{Group: g, Resource: r, Mode: hold.ModeAnnotation})
		}
	}
	return targets
}

// SluiceGroups are the API groups of every Sluice kind.
var SluiceGroups = []string{
	"gating.sluice.dev", "health.sluice.dev", "commitstatus.sluice.dev",
	"scm.sluice.dev", "promoter.sluice.dev", "rollback.sluice.dev",
}

// SluiceResources are the resources of every Sluice kind by group, named rather than "*" so the
// chart's RBAC (rendered from the same list) grants patch on them and on no subresource. The
// chart tests check that it covers every CRD in api/crds.
var SluiceResources = map[string][]string{
	"gating.sluice.dev":       {"gates"},
	"health.sluice.dev":       {"healthchecks"},
	"commitstatus.sluice.dev": {"commitstatuses"},
	"scm.sluice.dev":          {"scmproviders", "scmrepositories"},
	"promoter.sluice.dev":     {"promotionstrategies", "proposedcommits", "pullrequests"},
	"rollback.sluice.dev":     {"manifestreleases", "revertcommits", "rollbackpolicies"},
}

// FormatTargets is the flag form of targets.
func FormatTargets(targets []Target) string {
	parts := make([]string, len(targets))
	for i, t := range targets {
		parts[i] = t.String()
	}
	return strings.Join(parts, ",")
}

// ParseTargets reads --targets: comma-separated RESOURCE.GROUP=MODE entries, such as
// "kustomizations.kustomize.toolkit.fluxcd.io=both,*.gating.sluice.dev=annotation". MODE is
// annotation, spec or both; RESOURCE may be * for every resource of the group. A later entry for
// the same resource replaces an earlier one.
func ParseTargets(value string) ([]Target, error) {
	if strings.TrimSpace(value) == "" {
		return nil, fmt.Errorf("--targets is empty; list RESOURCE.GROUP=MODE entries, e.g. kustomizations.kustomize.toolkit.fluxcd.io=both")
	}
	var targets []Target
	index := map[schema.GroupResource]int{}
	for _, entry := range strings.Split(value, ",") {
		entry = strings.TrimSpace(entry)
		t, err := parseTarget(entry)
		if err != nil {
			return nil, fmt.Errorf("--targets entry %q: %w", entry, err)
		}
		gr := schema.GroupResource{Group: t.Group, Resource: t.Resource}
		if i, seen := index[gr]; seen {
			targets[i] = t
			continue
		}
		index[gr] = len(targets)
		targets = append(targets, t)
	}
	return targets, nil
}

func parseTarget(entry string) (Target, error) {
	if entry == "" {
		return Target{}, fmt.Errorf("is empty; remove the extra comma")
	}
	resourceGroup, modeName, ok := strings.Cut(entry, "=")
	if !ok {
		return Target{}, fmt.Errorf("has no mode; write RESOURCE.GROUP=MODE with MODE annotation, spec or both")
	}
	mode, err := hold.ParseMode(modeName)
	if err != nil {
		return Target{}, err
	}
	resource, group, _ := strings.Cut(strings.TrimSpace(resourceGroup), ".")
	if resource == "" {
		return Target{}, fmt.Errorf("names no resource; write the plural resource name, e.g. kustomizations.kustomize.toolkit.fluxcd.io")
	}
	if resource != AllResources {
		if errs := validation.IsDNS1123Label(resource); len(errs) > 0 {
			return Target{}, fmt.Errorf("resource %q is not a plural resource name: %s", resource, strings.Join(errs, "; "))
		}
	}
	if group != "" {
		if errs := validation.IsDNS1123Subdomain(group); len(errs) > 0 {
			return Target{}, fmt.Errorf("group %q is not an API group: %s", group, strings.Join(errs, "; "))
		}
	} else if resource == AllResources {
		return Target{}, fmt.Errorf("* needs a group: holding every core resource is never meant")
	}
	return Target{Group: group, Resource: resource, Mode: mode}, nil
}

// ModeOf is how targets hold the resource gr: a target naming it wins over one for its whole
// group. It reports false when no target covers gr.
func ModeOf(targets []Target, gr schema.GroupResource) (hold.Mode, bool) {
	var mode hold.Mode
	found := false
	for _, t := range targets {
		if t.Group != gr.Group {
			continue
		}
		if t.Resource == gr.Resource {
			return t.Mode, true
		}
		if t.Resource == AllResources {
			mode, found = t.Mode, true
		}
	}
	return mode, found
}
