// Package fluxsource finds the Flux source whose artifact a Kustomization or HelmRelease applies,
// and the revision that source has fetched: the revision a gate's approval names. The
// gate-controller, which lets an approved revision through, and the UI, which fills it in on the
// approval form, read it alike.
package fluxsource

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of Flux's sources.
const Group = "source.toolkit.fluxcd.io"

// The kinds whose source Of follows: the ones a gate's approval applies to.
var (
	Kustomizations = schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"}
	HelmReleases   = schema.GroupResource{Group: "helm.toolkit.fluxcd.io", Resource: "helmreleases"}
)

// resources are the resources of Flux's source kinds, by kind.
var resources = map[string]string{
	"GitRepository": "gitrepositories",
	"OCIRepository": "ocirepositories",
	"Bucket":        "buckets",
	"HelmChart":     "helmcharts",
}

// Ref names the Flux source whose artifact a target applies.
type Ref struct {
	schema.GroupResource
	Namespace, Name string
}

func (s Ref) String() string { return s.Resource + " " + s.Namespace + "/" + s.Name }

// Of finds the source of a held Flux object, whose artifact revision is the revision the object
// applies once released. A held object reconciles nothing, so its own status still shows the
// revision it last applied; its source goes on fetching and shows the one it would apply.
//   - a Kustomization: spec.sourceRef (GitRepository, OCIRepository or Bucket);
//   - a HelmRelease: spec.chartRef (OCIRepository or HelmChart), else the HelmChart
//     helm-controller made for it: status.helmChart ("namespace/name"), else
//     "<namespace>-<name>" in the namespace of spec.chart.spec.sourceRef.
//
// It reports why when the object has no source it can follow.
func Of(gr schema.GroupResource, obj *unstructured.Unstructured) (Ref, error) {
	ns := obj.GetNamespace()
	switch gr {
	case Kustomizations:
		return refAt(obj, ns, "spec", "sourceRef")
	case HelmReleases:
		if _, found, _ := unstructured.NestedMap(obj.Object, "spec", "chartRef"); found {
			return refAt(obj, ns, "spec", "chartRef")
		}
		chart := Ref{GroupResource: schema.GroupResource{Group: Group, Resource: "helmcharts"}}
		if made, _, _ := unstructured.NestedString(obj.Object, "status", "helmChart"); made != "" {
			if chartNS, name, ok := strings.Cut(made, "/"); ok && chartNS != "" && name != "" {
				chart.Namespace, chart.Name = chartNS, name
				return chart, nil
			}
		}
		sourceNS, _, _ := unstructured.NestedString(obj.Object, "spec", "chart", "spec", "sourceRef", "namespace")
		if _, found, _ := unstructured.NestedMap(obj.Object, "spec", "chart", "spec", "sourceRef"); !found {
			return Ref{}, fmt.Errorf("it has neither spec.chartRef nor spec.chart.spec.sourceRef")
		}
		chart.Namespace, chart.Name = orDefault(sourceNS, ns), ns+"-"+obj.GetName()
		return chart, nil
	default:
		return Ref{}, fmt.Errorf("a %s has no Flux source to follow; approvals apply to Kustomizations and HelmReleases", obj.GetKind())
	}
}

// refAt reads a Flux cross-namespace source reference {kind, name, namespace} at path.
func refAt(obj *unstructured.Unstructured, defaultNamespace string, path ...string) (Ref, error) {
	field := strings.Join(path, ".")
	ref, found, _ := unstructured.NestedStringMap(obj.Object, path...)
	if !found {
		return Ref{}, fmt.Errorf("it has no %s", field)
	}
	resource, known := resources[ref["kind"]]
	if !known || ref["name"] == "" {
		return Ref{}, fmt.Errorf("%s names %s %q, not a Flux source the gate-controller follows", field, ref["kind"], ref["name"])
	}
	return Ref{
		GroupResource: schema.GroupResource{Group: Group, Resource: resource},
		Namespace:     orDefault(ref["namespace"], defaultNamespace), Name: ref["name"],
	}, nil
}

// ArtifactRevision is status.artifact.revision of a Flux source: the revision it has fetched.
func ArtifactRevision(src *unstructured.Unstructured) (string, error) {
	revision, _, _ := unstructured.NestedString(src.Object, "status", "artifact", "revision")
	if revision == "" {
		return "", fmt.Errorf("%s %s/%s has no artifact yet", src.GetKind(), src.GetNamespace(), src.GetName())
	}
	return revision, nil
}

func orDefault(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
