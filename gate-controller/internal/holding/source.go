package holding

import (
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fluxSourceGroup is the API group of Flux's sources.
const fluxSourceGroup = "source.toolkit.fluxcd.io"

// fluxSourceResources are the resources of Flux's source kinds, by kind.
var fluxSourceResources = map[string]string{
	"GitRepository": "gitrepositories",
	"OCIRepository": "ocirepositories",
	"Bucket":        "buckets",
	"HelmChart":     "helmcharts",
}

// SourceRef names the Flux source whose artifact a target applies.
type SourceRef struct {
	schema.GroupResource
	Namespace, Name string
}

// Key is the work-queue key of the source as a watched object (see Key).
func (s SourceRef) Key() string { return s.GroupResource.String() + "|" + s.Namespace + "/" + s.Name }

func (s SourceRef) String() string { return s.Resource + " " + s.Namespace + "/" + s.Name }

// SourceOf finds the source of a held Flux object, whose artifact revision is the revision the
// object applies once released. A held object reconciles nothing, so its own status still shows
// the revision it last applied; its source goes on fetching and shows the one it would apply.
//   - a Kustomization: spec.sourceRef (GitRepository, OCIRepository or Bucket);
//   - a HelmRelease: spec.chartRef (OCIRepository or HelmChart), else the HelmChart
//     helm-controller made for it: status.helmChart ("namespace/name"), else
//     "<namespace>-<name>" in the namespace of spec.chart.spec.sourceRef.
//
// It reports why when the object has no source it can follow.
func SourceOf(gr schema.GroupResource, obj *unstructured.Unstructured) (SourceRef, error) {
	ns := obj.GetNamespace()
	switch gr {
	case schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"}:
		return refAt(obj, ns, "spec", "sourceRef")
	case schema.GroupResource{Group: "helm.toolkit.fluxcd.io", Resource: "helmreleases"}:
		if _, found, _ := unstructured.NestedMap(obj.Object, "spec", "chartRef"); found {
			return refAt(obj, ns, "spec", "chartRef")
		}
		chart := SourceRef{GroupResource: schema.GroupResource{Group: fluxSourceGroup, Resource: "helmcharts"}}
		if made, _, _ := unstructured.NestedString(obj.Object, "status", "helmChart"); made != "" {
			if chartNS, name, ok := strings.Cut(made, "/"); ok && chartNS != "" && name != "" {
				chart.Namespace, chart.Name = chartNS, name
				return chart, nil
			}
		}
		sourceNS, _, _ := unstructured.NestedString(obj.Object, "spec", "chart", "spec", "sourceRef", "namespace")
		if _, found, _ := unstructured.NestedMap(obj.Object, "spec", "chart", "spec", "sourceRef"); !found {
			return SourceRef{}, fmt.Errorf("it has neither spec.chartRef nor spec.chart.spec.sourceRef")
		}
		chart.Namespace, chart.Name = orDefault(sourceNS, ns), ns+"-"+obj.GetName()
		return chart, nil
	default:
		return SourceRef{}, fmt.Errorf("a %s has no Flux source to follow; approvals apply to Kustomizations and HelmReleases", obj.GetKind())
	}
}

// refAt reads a Flux cross-namespace source reference {kind, name, namespace} at path.
func refAt(obj *unstructured.Unstructured, defaultNamespace string, path ...string) (SourceRef, error) {
	field := strings.Join(path, ".")
	ref, found, _ := unstructured.NestedStringMap(obj.Object, path...)
	if !found {
		return SourceRef{}, fmt.Errorf("it has no %s", field)
	}
	resource, known := fluxSourceResources[ref["kind"]]
	if !known || ref["name"] == "" {
		return SourceRef{}, fmt.Errorf("%s names %s %q, not a Flux source the gate-controller follows", field, ref["kind"], ref["name"])
	}
	return SourceRef{
		GroupResource: schema.GroupResource{Group: fluxSourceGroup, Resource: resource},
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

// Followers remembers which targets follow which source, so that a source's new revision brings
// back the targets that wait for an approval of it. A target follows one source at a time.
type Followers struct {
	mu       sync.Mutex
	sourceOf map[string]string
	targets  map[string]map[string]bool
}

// NewFollowers returns an empty Followers.
func NewFollowers() *Followers {
	return &Followers{sourceOf: map[string]string{}, targets: map[string]map[string]bool{}}
}

// Follow makes target follow source, and only it. A nil Followers follows nothing.
func (f *Followers) Follow(target, source string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sourceOf[target] == source {
		return
	}
	f.unfollowLocked(target)
	f.sourceOf[target] = source
	if f.targets[source] == nil {
		f.targets[source] = map[string]bool{}
	}
	f.targets[source][target] = true
}

// Follows reports whether target follows a source.
func (f *Followers) Follows(target string) bool {
	_, ok := f.Source(target)
	return ok
}

// Source is the key of the source target follows, if it follows one.
func (f *Followers) Source(target string) (string, bool) {
	if f == nil {
		return "", false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	source, ok := f.sourceOf[target]
	return source, ok
}

// Unfollow stops target following any source.
func (f *Followers) Unfollow(target string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unfollowLocked(target)
}

func (f *Followers) unfollowLocked(target string) {
	source, ok := f.sourceOf[target]
	if !ok {
		return
	}
	delete(f.sourceOf, target)
	delete(f.targets[source], target)
	if len(f.targets[source]) == 0 {
		delete(f.targets, source)
	}
}

// Of returns the targets that follow source.
func (f *Followers) Of(source string) []string {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]string, 0, len(f.targets[source]))
	for k := range f.targets[source] {
		keys = append(keys, k)
	}
	return keys
}
