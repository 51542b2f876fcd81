package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// ParseFile reads every object of one file of YAML or JSON documents. Empty documents are
// skipped and v1 Lists are expanded; an object without apiVersion, kind or metadata.name is an
// error that names the file and the document.
func ParseFile(name string, data []byte) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", describe(name, doc), err)
		}
		parsed, err := parseDocument(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", describe(name, doc), err)
		}
		objs = append(objs, parsed...)
	}
}

func parseDocument(raw []byte) ([]*unstructured.Unstructured, error) {
	var content map[string]any
	if err := yaml.Unmarshal(raw, &content); err != nil {
		return nil, err
	}
	if len(content) == 0 {
		return nil, nil
	}
	obj := &unstructured.Unstructured{Object: content}
	if obj.GetAPIVersion() == "v1" && obj.GetKind() == "List" {
		list, err := obj.ToList()
		if err != nil {
			return nil, err
		}
		var objs []*unstructured.Unstructured
		for i := range list.Items {
			if err := checkIdentity(&list.Items[i]); err != nil {
				return nil, fmt.Errorf("item %d of the List: %w", i, err)
			}
			objs = append(objs, &list.Items[i])
		}
		return objs, nil
	}
	if err := checkIdentity(obj); err != nil {
		return nil, err
	}
	return []*unstructured.Unstructured{obj}, nil
}

func checkIdentity(obj *unstructured.Unstructured) error {
	switch {
	case obj.GetAPIVersion() == "":
		return errors.New("an object has no apiVersion")
	case obj.GetKind() == "":
		return fmt.Errorf("an object of %s has no kind", obj.GetAPIVersion())
	case obj.GetName() == "":
		return fmt.Errorf("a %s has no metadata.name (generateName cannot be applied twice to the same object)", obj.GetKind())
	}
	if _, err := schema.ParseGroupVersion(obj.GetAPIVersion()); err != nil {
		return fmt.Errorf("%s %q: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// Scope says whether a kind is namespaced.
type Scope func(schema.GroupVersionKind) (namespaced bool, err error)

// ScopeFrom answers from the CRDs among objs first, since the cluster does not know them until
// they are applied, then from the cluster's mapper.
func ScopeFrom(mapper meta.RESTMapper, objs []*unstructured.Unstructured) Scope {
	own := map[schema.GroupKind]bool{}
	for _, obj := range objs {
		if !RefOf(obj).IsCRD() {
			continue
		}
		group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(obj.Object, "spec", "scope")
		own[schema.GroupKind{Group: group, Kind: kind}] = scope == "Namespaced"
	}
	return func(gvk schema.GroupVersionKind) (bool, error) {
		if namespaced, ok := own[gvk.GroupKind()]; ok {
			return namespaced, nil
		}
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return false, fmt.Errorf("the cluster does not serve %s %s: install its CRD, or add the CRD to the manifests: %w",
				gvk.GroupVersion(), gvk.Kind, err)
		}
		return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
	}
}

// Prepare puts every object of the files in apply order. Namespaced objects without a namespace
// get defaultNamespace, cluster-scoped ones lose any namespace they name, and an object that
// appears twice is an error naming both places.
func Prepare(files map[string][]byte, scope Scope, defaultNamespace string) ([]*unstructured.Unstructured, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	var all []*unstructured.Unstructured
	where := map[string]string{}
	for _, name := range names {
		objs, err := ParseFile(name, files[name])
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if err := setNamespace(obj, scope, defaultNamespace); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			id := RefOf(obj).ID()
			if first, dup := where[id]; dup {
				return nil, fmt.Errorf("%s appears twice, in %s and in %s", RefOf(obj), first, name)
			}
			where[id] = name
			all = append(all, obj)
		}
	}
	Sort(all)
	return all, nil
}

func setNamespace(obj *unstructured.Unstructured, scope Scope, defaultNamespace string) error {
	namespaced, err := scope(obj.GroupVersionKind())
	if err != nil {
		return err
	}
	switch {
	case !namespaced:
		obj.SetNamespace("")
	case obj.GetNamespace() == "" && defaultNamespace == "":
		return fmt.Errorf("%s has no namespace and there is no default", RefOf(obj))
	case obj.GetNamespace() == "":
		obj.SetNamespace(defaultNamespace)
	}
	return nil
}

// Sort puts objects in apply order.
func Sort(objs []*unstructured.Unstructured) {
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return compare(RefOf(a), RefOf(b)) })
}

// Stages splits objects in apply order into the first stage (CRDs and Namespaces) and the rest.
func Stages(objs []*unstructured.Unstructured) (first, rest []*unstructured.Unstructured) {
	for _, obj := range objs {
		if InFirstStage(RefOf(obj)) {
			first = append(first, obj)
		} else {
			rest = append(rest, obj)
		}
	}
	return first, rest
}

// Names of the objects, for messages: at most limit, then "and N more".
func Names(refs []Ref, limit int) string {
	var parts []string
	for i, r := range refs {
		if i == limit {
			parts = append(parts, fmt.Sprintf("and %d more", len(refs)-limit))
			break
		}
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ", ")
}
