package web

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// approvableTargets are the kinds whose revision a gate's approval lets through (the
// gate-controller's holding.SourceOf), at the version the UI reads them.
var approvableTargets = map[string]schema.GroupVersionResource{
	"Kustomization": {Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"},
	"HelmRelease":   {Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"},
}

// fluxSources are the Flux source kinds whose artifact a Kustomization or HelmRelease applies.
var fluxSources = map[string]string{"GitRepository": "gitrepositories", "OCIRepository": "ocirepositories",
	"Bucket": "buckets", "HelmChart": "helmcharts"}

// fluxSource names a Flux source object.
type fluxSource struct {
	resource        schema.GroupVersionResource
	namespace, name string
}

// fluxSourceOf finds the source whose artifact a held Kustomization or HelmRelease would apply,
// as the gate-controller does: a Kustomization's spec.sourceRef; a HelmRelease's spec.chartRef,
// else the HelmChart helm-controller made for it (status.helmChart, "namespace/name"), else the
// one it will make, "<namespace>-<name>" in the namespace of spec.chart.spec.sourceRef.
func fluxSourceOf(obj *unstructured.Unstructured) (fluxSource, bool) {
	ns := obj.GetNamespace()
	if obj.GetKind() == "Kustomization" {
		return sourceRefAt(obj, ns, "spec", "sourceRef")
	}
	if _, found, _ := unstructured.NestedMap(obj.Object, "spec", "chartRef"); found {
		return sourceRefAt(obj, ns, "spec", "chartRef")
	}
	chart := fluxSource{resource: sourceResource("helmcharts")}
	if made, _, _ := unstructured.NestedString(obj.Object, "status", "helmChart"); made != "" {
		chart.namespace, chart.name, _ = strings.Cut(made, "/")
		return chart, chart.namespace != "" && chart.name != ""
	}
	ref, found, _ := unstructured.NestedStringMap(obj.Object, "spec", "chart", "spec", "sourceRef")
	if !found {
		return fluxSource{}, false
	}
	chart.namespace, chart.name = orNamespace(ref["namespace"], ns), ns+"-"+obj.GetName()
	return chart, true
}

// sourceRefAt reads a Flux cross-namespace source reference {kind, name, namespace} at path.
func sourceRefAt(obj *unstructured.Unstructured, defaultNamespace string, path ...string) (fluxSource, bool) {
	ref, _, _ := unstructured.NestedStringMap(obj.Object, path...)
	resource, known := fluxSources[ref["kind"]]
	if !known || ref["name"] == "" {
		return fluxSource{}, false
	}
	return fluxSource{resource: sourceResource(resource), namespace: orNamespace(ref["namespace"], defaultNamespace), name: ref["name"]}, true
}

func sourceResource(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: resource}
}

func orNamespace(ns, fallback string) string {
	if ns == "" {
		return fallback
	}
	return ns
}
