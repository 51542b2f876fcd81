package store

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
)

// TargetKind is a Flux or Argo CD kind that gates hold by default (the gate-controller's
// --targets defaults), read at the version its current release serves.
type TargetKind struct {
	Resource schema.GroupVersionResource
	Kind     string
	// Project is what installs the CRD, named on a page when it is missing.
	Project string
}

// TargetKinds are the kinds the gate-controller holds by default, besides Sluice's own. The
// UI's chart grants get, list and watch on exactly these.
var TargetKinds = []TargetKind{
	{schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}, "Kustomization", "Flux"},
	{schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}, "HelmRelease", "Flux"},
	{schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}, "GitRepository", "Flux"},
	{schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"}, "OCIRepository", "Flux"},
	{schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmrepositories"}, "HelmRepository", "Flux"},
	{schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "buckets"}, "Bucket", "Flux"},
	{schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}, "HelmChart", "Flux"},
	{schema.GroupVersionResource{Group: "image.toolkit.fluxcd.io", Version: "v1", Resource: "imageupdateautomations"}, "ImageUpdateAutomation", "Flux"},
	{schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}, "Application", "Argo CD"},
}

// byGate indexes an object by each gate its gating.sluice.dev/gates annotation names, as
// "namespace/name".
const byGate = "gate"

// gatesOf is the byGate index: an object whose annotation cannot be read references no gate
// (the gate-controller reports it on the object).
func gatesOf(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	value, ok := m.GetAnnotations()[gate.GatesAnnotation]
	if !ok {
		return nil, nil
	}
	refs, err := gate.ParseRefs(value, m.GetNamespace())
	if err != nil {
		return nil, nil
	}
	keys := make([]string, len(refs))
	for i, r := range refs {
		keys[i] = r.String()
	}
	return keys, nil
}

// newTargetInformer reads only the metadata of a target kind: its annotations carry the gates it
// references and whether and why it is held.
func newTargetInformer(meta metadata.Interface, gvr schema.GroupVersionResource, namespace string) cache.SharedIndexInformer {
	informer := metadatainformer.NewFilteredMetadataInformer(meta, gvr, namespace, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, byGate: gatesOf}, nil).Informer()
	_ = informer.SetTransform(stripBookkeeping)
	_ = informer.SetWatchErrorHandlerWithContext(quietWhenRemoved)
	return informer
}

// quietWhenRemoved leaves unlogged the watch errors of a kind whose CRD was removed after its
// informer started (an informer cannot be restarted): the CRD watch reports the kind missing and
// its pages say so. The reflector keeps retrying with backoff, and reads the kind again once the
// CRD is back. Any other watch error is client-go's to log.
func quietWhenRemoved(ctx context.Context, r *cache.Reflector, err error) {
	if apierrors.IsNotFound(err) {
		return
	}
	cache.DefaultWatchErrorHandler(ctx, r, err)
}

// stripBookkeeping drops managed fields and kubectl's last applied manifest, often most of an
// object's metadata, before it is cached.
func stripBookkeeping(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		m.ManagedFields = nil
		delete(m.Annotations, dynamicwatch.LastAppliedAnnotation)
	}
	return obj, nil
}

// Referencing returns the objects of every target kind whose gating.sluice.dev/gates
// annotation names the gate namespace/name, with their kind: those the scope may list.
func (s *Store) Referencing(namespace, name string) []Referrer {
	var out []Referrer
	for i, k := range s.Targets {
		// Found by annotation, not by name: any object of the kind may start naming the gate, and
		// each change of one names the gates it referenced and references (affects.go).
		k.reads.add(GateTargetsKey(namespace, name))
		objs, err := k.Informer.GetIndexer().ByIndex(byGate, namespace+"/"+name)
		if err != nil {
			continue
		}
		for _, o := range objs {
			if m, ok := o.(*metav1.PartialObjectMetadata); ok && k.mayList(m.Namespace) {
				out = append(out, Referrer{Kind: TargetKinds[i].Kind, Object: m})
			}
		}
	}
	return out
}

// Referrer is an object that references a gate, and its kind.
type Referrer struct {
	Kind   string
	Object *metav1.PartialObjectMetadata
}

// MissingTargets returns the target kinds whose CRD is not installed (or not yet read).
func (s *Store) MissingTargets() []TargetKind {
	var out []TargetKind
	for i, k := range s.Targets {
		if !k.Installed() {
			out = append(out, TargetKinds[i])
		}
	}
	return out
}
