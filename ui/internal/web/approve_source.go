package web

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluicehq/sluice/pkg/fluxsource"
)

// approvableTargets are the kinds whose revision a gate's approval lets through (see
// fluxsource.Of, which the gate-controller follows too), at the version the UI reads them.
var approvableTargets = map[string]schema.GroupVersionResource{
	"Kustomization": fluxsource.Kustomizations.WithVersion("v1"),
	"HelmRelease":   fluxsource.HelmReleases.WithVersion("v2"),
}

// sourceResource is the resource of a Flux source at the version the UI reads them.
func sourceResource(src fluxsource.Ref) schema.GroupVersionResource {
	return src.GroupResource.WithVersion("v1")
}
