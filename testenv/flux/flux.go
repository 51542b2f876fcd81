// Package flux provides the real Flux CRDs to tests and the demo. They come from the fluxcd Go
// modules, never from copies committed here: source-controller and kustomize-controller ship
// their CRD YAML in their modules, while helm-controller and image-automation-controller are
// served by the module proxy only as api modules, so their CRDs are generated from the api types
// with the repository's pinned controller-gen, as Flux itself generates them.
package flux

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Module versions the CRDs are taken from. Newer releases (source-controller v1.10,
// helm-controller/api v1.7, image-automation-controller/api v1.3) need Go 1.27.
const (
	SourceControllerVersion          = "v1.9.6"
	KustomizeControllerVersion       = "v1.9.6"
	HelmControllerAPIVersion         = "v1.6.5"
	ImageAutomationControllerVersion = "v1.2.5"
)

// Resources of the Flux kinds the gate-controller holds by default, at their storage versions.
var (
	GitRepositories        = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	OCIRepositories        = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}
	HelmRepositories       = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmrepositories"}
	Buckets                = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "buckets"}
	HelmCharts             = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}
	Kustomizations         = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	HelmReleases           = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	ImageUpdateAutomations = schema.GroupVersionResource{Group: "image.toolkit.fluxcd.io", Version: "v1", Resource: "imageupdateautomations"}
)

// source names a module and how its CRDs are obtained.
type source struct {
	module, version string
	// generate is true for api modules without CRD YAML: controller-gen runs over their types.
	generate bool
}

var sources = []source{
	{module: "github.com/fluxcd/source-controller", version: SourceControllerVersion},
	{module: "github.com/fluxcd/kustomize-controller", version: KustomizeControllerVersion},
	{module: "github.com/fluxcd/helm-controller/api", version: HelmControllerAPIVersion, generate: true},
	{module: "github.com/fluxcd/image-automation-controller/api", version: ImageAutomationControllerVersion, generate: true},
}
