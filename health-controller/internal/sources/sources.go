// Package sources reads what Flux Kustomizations and Argo CD Applications report about the
// objects they apply and the revision they run.
package sources

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The kinds whose status lists the objects they manage.
var (
	Kustomization = schema.GroupKind{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization"}
	Application   = schema.GroupKind{Group: "argoproj.io", Kind: "Application"}
)

// ObjectRef names one managed object. Namespace is empty for cluster-scoped objects.
type ObjectRef struct {
	Group, Version, Kind string
	Namespace, Name      string
}

// GroupVersionKind returns the reference's kind with its version.
func (r ObjectRef) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// KustomizationInventory returns the objects in status.inventory.entries. Each entry id is
// "<namespace>_<name>_<group>_<kind>" (namespace and group may be empty) and v is the version.
// The id is cli-utils' ObjMetadata, which Flux writes with the ":" of a name, as RBAC objects
// have, as "__" (parseInventoryID). A Kustomization that has not applied
// anything yet has no inventory: the list is empty. An entry that cannot be read is reported,
// and the others are still checked.
func KustomizationInventory(ks *unstructured.Unstructured) ([]ObjectRef, error) {
	entries, _, err := unstructured.NestedSlice(ks.Object, "status", "inventory", "entries")
	if err != nil {
		return nil, fmt.Errorf("Kustomization %s: status.inventory.entries: %w", key(ks), err)
	}
	refs := make([]ObjectRef, 0, len(entries))
	var problems []string
	for i, raw := range entries {
		entry, ok := raw.(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("inventory entry %d is not an object", i))
			continue
		}
		id, _ := entry["id"].(string)
		version, _ := entry["v"].(string)
		ref, ok := parseInventoryID(id)
		if !ok || version == "" {
			problems = append(problems, fmt.Sprintf("inventory entry %d has id %q and v %q; want id <namespace>_<name>_<group>_<kind> and a version", i, id, version))
			continue
		}
		ref.Version = version
		refs = append(refs, ref)
	}
	if len(problems) > 0 {
		return refs, &InventoryError{Kustomization: key(ks), Problems: problems}
	}
	return refs, nil
}

// parseInventoryID reads "<namespace>_<name>_<group>_<kind>". Namespaces, groups and kinds hold
// no "_", and names hold none but the "__" that stands for ":", so the namespace ends at the
// first "_" and the kind and group start after the last ones. This is the whole of what Sluice
// needs from cli-utils' object package, whose imports (cli-runtime, kustomize) would make up a
// good part of the controller's binary and of its resident memory.
func parseInventoryID(id string) (ObjectRef, bool) {
	namespace, rest, ok := strings.Cut(id, "_")
	if !ok {
		return ObjectRef{}, false
	}
	i := strings.LastIndex(rest, "_")
	if i < 0 {
		return ObjectRef{}, false
	}
	kind, rest := rest[i+1:], rest[:i]
	i = strings.LastIndex(rest, "_")
	if i < 0 {
		return ObjectRef{}, false
	}
	group, name := rest[i+1:], strings.ReplaceAll(rest[:i], "__", ":")
	if name == "" || kind == "" || strings.Contains(name, "_") {
		return ObjectRef{}, false
	}
	return ObjectRef{Namespace: namespace, Name: name, Group: group, Kind: kind}, true
}

// InventoryError lists the inventory entries that cannot be read; the others are returned.
type InventoryError struct {
	Kustomization string
	Problems      []string
}

func (e *InventoryError) Error() string {
	const shown = 5
	list := e.Problems
	more := ""
	if len(list) > shown {
		more = fmt.Sprintf("; and %d more", len(list)-shown)
		list = list[:shown]
	}
	return fmt.Sprintf("Kustomization %s: %s%s", e.Kustomization, strings.Join(list, "; "), more)
}

// ApplicationResources returns the objects in status.resources of an Argo CD Application.
func ApplicationResources(app *unstructured.Unstructured) ([]ObjectRef, error) {
	resources, _, err := unstructured.NestedSlice(app.Object, "status", "resources")
	if err != nil {
		return nil, fmt.Errorf("Application %s: status.resources: %w", key(app), err)
	}
	refs := make([]ObjectRef, 0, len(resources))
	for i, raw := range resources {
		r, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("Application %s: resource %d is not an object", key(app), i)
		}
		ref := ObjectRef{}
		ref.Group, _ = r["group"].(string)
		ref.Version, _ = r["version"].(string)
		ref.Kind, _ = r["kind"].(string)
		ref.Namespace, _ = r["namespace"].(string)
		ref.Name, _ = r["name"].(string)
		if ref.Kind == "" || ref.Name == "" || ref.Version == "" {
			return nil, fmt.Errorf("Application %s: resource %d lacks kind, name or version", key(app), i)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// KustomizationRevision returns status.lastAppliedRevision, for example "main@sha1:<sha>", and
// the commit in it. Sources that are not git (OCIRepository, Bucket) have digests, not commits,
// and are refused.
func KustomizationRevision(ks *unstructured.Unstructured) (revision, commit string, err error) {
	revision, _, err = unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
	if err != nil {
		return "", "", fmt.Errorf("Kustomization %s: status.lastAppliedRevision: %w", key(ks), err)
	}
	if revision == "" {
		return "", "", fmt.Errorf("Kustomization %s has not applied a revision yet (status.lastAppliedRevision is empty)", key(ks))
	}
	if kind, _, _ := unstructured.NestedString(ks.Object, "spec", "sourceRef", "kind"); kind != "" && kind != "GitRepository" {
		return revision, "", fmt.Errorf("Kustomization %s applies from a %s, whose revision %q is not a git commit", key(ks), kind, revision)
	}
	commit, err = ParseCommit(revision)
	if err != nil {
		return revision, "", fmt.Errorf("Kustomization %s: %w", key(ks), err)
	}
	return revision, commit, nil
}

// ApplicationRevision returns status.sync.revision, or the first of status.sync.revisions for a
// multi-source Application, and the commit in it.
func ApplicationRevision(app *unstructured.Unstructured) (revision, commit string, err error) {
	revision, _, err = unstructured.NestedString(app.Object, "status", "sync", "revision")
	if err != nil {
		return "", "", fmt.Errorf("Application %s: status.sync.revision: %w", key(app), err)
	}
	if revision == "" {
		revisions, _, err := unstructured.NestedStringSlice(app.Object, "status", "sync", "revisions")
		if err != nil {
			return "", "", fmt.Errorf("Application %s: status.sync.revisions: %w", key(app), err)
		}
		if len(revisions) > 0 {
			revision = revisions[0]
		}
	}
	if revision == "" {
		return "", "", fmt.Errorf("Application %s has not synced a revision yet (status.sync.revision is empty)", key(app))
	}
	commit, err = ParseCommit(revision)
	if err != nil {
		return revision, "", fmt.Errorf("Application %s: %w", key(app), err)
	}
	return revision, commit, nil
}

var commitPattern = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// ParseCommit extracts the full commit id from the revision formats Flux and Argo CD write:
// "main@sha1:<sha>", "refs/tags/v1@sha1:<sha>", "sha1:<sha>", "sha256:<sha>", the pre-2.0 Flux
// "main/<sha>", and a bare "<sha>".
func ParseCommit(revision string) (string, error) {
	s := revision
	if i := strings.LastIndex(s, "@"); i >= 0 {
		s = s[i+1:]
	}
	if algo, digest, ok := strings.Cut(s, ":"); ok {
		if algo != "sha1" && algo != "sha256" {
			return "", fmt.Errorf("revision %q: unknown digest algorithm %q", revision, algo)
		}
		s = digest
	} else if i := strings.LastIndex(s, "/"); i >= 0 {
		s = s[i+1:]
	}
	s = strings.ToLower(s)
	if !commitPattern.MatchString(s) {
		return "", fmt.Errorf("revision %q does not hold a full commit id (40 or 64 hex characters)", revision)
	}
	return s, nil
}

func key(u *unstructured.Unstructured) string {
	return u.GetNamespace() + "/" + u.GetName()
}
