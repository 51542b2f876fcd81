package charts

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Objects parses the output of `helm template` into objects, skipping empty documents.
func Objects(rendered string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rendered), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("rendered YAML: %w", err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// OfKind returns the objects of kind.
func OfKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// ContainerArgs returns the args of the first container of the Deployment named name.
func ContainerArgs(objs []*unstructured.Unstructured, name string) ([]string, error) {
	for _, d := range OfKind(objs, "Deployment") {
		if d.GetName() != name {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		if len(containers) == 0 {
			return nil, fmt.Errorf("Deployment %s has no container", name)
		}
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		return args, nil
	}
	return nil, fmt.Errorf("no Deployment %s rendered", name)
}

// Flag returns the value of --name in args, and whether it is there (the last one wins, as for
// the flag package).
func Flag(args []string, name string) (string, bool) {
	value, found := "", false
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			value, found = v, true
		}
	}
	return value, found
}
