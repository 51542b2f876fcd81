package store

import (
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// affecting is an informer's event handler that tells hub each change of an object of kind with
// the keys it affects (keys.go): those of the object before and after an update, so that a page
// that showed it, and one that shows it now, are both told. An update that leaves the object as
// cached (the transform kept none of the fields that changed, such as a status write a page does
// not show) is told to no one.
func affecting(hub *Hub, kind string, affects func(obj any) []Key) cache.ResourceEventHandlerFuncs {
	notify := func(obj any, keys []Key) { hub.NotifyAffecting(kind, namespaceOf(obj), nameOf(obj), keys) }
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { notify(obj, affects(obj)) },
		UpdateFunc: func(old, obj any) {
			if sameAsCached(old, obj) {
				return
			}
			notify(obj, union(affects(old), affects(obj)))
		},
		DeleteFunc: func(obj any) { notify(obj, affects(objectOf(obj))) },
	}
}

// objectOf is an informer's object, a deleted one's last known state too.
func objectOf(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

func union(a, b []Key) []Key {
	for _, k := range b {
		if !slices.Contains(a, k) {
			a = append(a, k)
		}
	}
	return a
}

// sameAsCached reports whether an update changed nothing the informer keeps but the resource
// version.
func sameAsCached(old, obj any) bool {
	switch o := old.(type) {
	case *metav1.PartialObjectMetadata:
		n, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return false
		}
		a, b := o.ObjectMeta, n.ObjectMeta
		a.ResourceVersion, b.ResourceVersion = "", ""
		return o.TypeMeta == n.TypeMeta && reflect.DeepEqual(a, b)
	case *unstructured.Unstructured:
		n, ok := obj.(*unstructured.Unstructured)
		return ok && reflect.DeepEqual(withoutVersion(o.Object), withoutVersion(n.Object))
	}
	return false
}

// withoutVersion is a shallow copy of an unstructured object without metadata.resourceVersion.
func withoutVersion(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	if meta, ok := obj["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(meta))
		for k, v := range meta {
			if k != "resourceVersion" {
				m[k] = v
			}
		}
		out["metadata"] = m
	}
	return out
}

// gateTargetKeys are the keys of the gates an object references (byGate).
func gateTargetKeys(obj any) []Key {
	refs, _ := gatesOf(obj)
	keys := make([]Key, 0, len(refs))
	for _, r := range refs {
		ns, name, _ := strings.Cut(r, "/")
		keys = append(keys, GateTargetsKey(ns, name))
	}
	return keys
}

// kustomizationAgentKeys are the keys of the branch a Kustomization deploys: that of the
// GitRepository it reads, as the store has it now (a GitRepository's own changes tell the pages of
// the branches it leaves and joins).
func (s *Store) kustomizationAgentKeys(obj any) []Key {
	refs, _ := sourceRefOf(obj)
	var keys []Key
	for _, ref := range refs {
		repo, ok, err := s.Agents.GitRepositories.Informer.GetIndexer().GetByKey(ref)
		if err == nil && ok {
			keys = append(keys, indexKeys(gitRepositoryBranch, repo)...)
		}
	}
	return keys
}

// indexKeys are the agents' keys of the index values index gives obj.
func indexKeys(index cache.IndexFunc, obj any) []Key {
	values, _ := index(obj)
	keys := make([]Key, 0, len(values))
	for _, v := range values {
		keys = append(keys, agentsKey(v))
	}
	return keys
}

// gitRepositoryHandler tells a GitRepository's changes: only one that makes it follow another
// branch, or none, changes which Kustomizations deploy a branch, so only those affect the pages
// of the branches, those it left and those it joined. Its status, which source-controller writes
// on every fetch, is shown on no page.
func (s *Store) gitRepositoryHandler() cache.ResourceEventHandlerFuncs {
	branches := func(obj any) []Key { return indexKeys(gitRepositoryBranch, obj) }
	h := affecting(s.Changes, "GitRepository", branches)
	h.UpdateFunc = func(old, obj any) {
		if sameAsCached(old, obj) {
			return
		}
		before, after := branches(old), branches(obj)
		var moved []Key
		for _, k := range union(slices.Clone(before), after) {
			if slices.Contains(before, k) != slices.Contains(after, k) {
				moved = append(moved, k)
			}
		}
		s.Changes.NotifyAffecting("GitRepository", namespaceOf(obj), nameOf(obj), moved)
	}
	return h
}
