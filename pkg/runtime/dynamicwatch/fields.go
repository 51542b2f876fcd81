package dynamicwatch

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// Fields is a tree of the fields of objects a watch keeps in its cache: each key keeps that
// field, and the Fields below it choose among the field's own fields. A nil Fields keeps the
// whole subtree, so All keeps every field of the objects.
//
// Readers that know what they read (a health check reads status and a few spec fields) let a
// watch of 10,000 Deployments drop their pod templates, most of their bytes.
type Fields map[string]Fields

// All keeps every field.
var All Fields

// FieldsOf builds the Fields that keep each path; an empty path keeps everything.
func FieldsOf(paths ...[]string) Fields {
	f := Fields{}
	for _, p := range paths {
		f = Union(f, path(p))
	}
	return f
}

func path(p []string) Fields {
	var f Fields // nil: everything below the path
	for i := len(p) - 1; i >= 0; i-- {
		f = Fields{p[i]: f}
	}
	return f
}

// Union keeps what either keeps.
func Union(a, b Fields) Fields {
	if a == nil || b == nil {
		return nil
	}
	out := make(Fields, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if prev, ok := out[k]; ok {
			out[k] = Union(prev, v)
		} else {
			out[k] = v
		}
	}
	return out
}

// Covers reports whether a keeps everything b keeps.
func Covers(a, b Fields) bool {
	if a == nil {
		return true
	}
	if b == nil {
		return false
	}
	for k, v := range b {
		av, ok := a[k]
		if !ok || !Covers(av, v) {
			return false
		}
	}
	return true
}

// project returns a copy of m with the fields f keeps. Maps are rebuilt to their new size, so
// the dropped subtrees, and the room they took, are freed. A field kept with sub-fields whose
// value is not a map (a list, say) is kept whole: readers never select fields inside a list.
func project(m map[string]any, f Fields) map[string]any {
	if f == nil {
		return m
	}
	out := make(map[string]any, len(f))
	for k, sub := range f {
		v, ok := m[k]
		if !ok {
			continue
		}
		if child, isMap := v.(map[string]any); isMap {
			v = project(child, sub)
		}
		out[k] = v
	}
	return out
}

// Project returns a cache transform that strips managedFields (StripManagedFields) and keeps the
// fields f keeps.
func Project(f Fields) cache.TransformFunc {
	keep := keepFields(f)
	return func(obj any) (any, error) {
		obj, err := StripManagedFields(obj)
		if err != nil {
			return obj, err
		}
		return keep(obj)
	}
}

// keepFields returns a cache transform that keeps the fields f keeps, and nothing else.
func keepFields(f Fields) cache.TransformFunc {
	return func(obj any) (any, error) {
		if f == nil {
			return obj, nil
		}
		switch o := obj.(type) {
		case cache.DeletedFinalStateUnknown:
			if u, ok := o.Obj.(*unstructured.Unstructured); ok {
				o.Obj = &unstructured.Unstructured{Object: project(u.Object, f)}
			}
			return o, nil
		case *unstructured.Unstructured:
			return &unstructured.Unstructured{Object: project(o.Object, f)}, nil
		}
		return obj, nil
	}
}
