package actions

import (
	"context"
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/sluicehq/sluice/pkg/suspend"
)

// Suspend suspends the object name of kind gvk with RFC-0006's annotation, whose value is the
// reason, and with spec.suspend: true too when bySpec (the kinds, Flux's, that honour only that
// field). It is a forced server-side apply, so the tool co-owns what it sets: an object suspended
// while a gate holds it stays suspended when the gate releases it. It returns the object and
// says what it set.
func Suspend(ctx context.Context, objects dynamic.ResourceInterface, gvk schema.GroupVersionKind, name, reason string, bySpec bool, fieldManager string) (*unstructured.Unstructured, string, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	u.SetAnnotations(map[string]string{suspend.Annotation: reason})
	how := "the annotation"
	if bySpec {
		u.Object["spec"] = map[string]any{"suspend": true}
		how = "spec.suspend and the annotation"
	}
	applied, err := objects.Apply(ctx, name, u, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	return applied, how, err
}

// Resume removes what suspends the object name: the annotation, and spec.suspend where it is
// true, in one merge patch. It returns the object as it was read, and what it removed; "" when
// nothing suspended it, and then it writes nothing.
func Resume(ctx context.Context, objects dynamic.ResourceInterface, name, fieldManager string) (*unstructured.Unstructured, string, error) {
	obj, err := objects.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	patch, undone := ResumePatch(obj)
	if patch == nil {
		return obj, "", nil
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return obj, "", err
	}
	_, err = objects.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: fieldManager})
	return obj, undone, err
}

// ResumePatch is the merge patch that removes what suspends obj, and says what it removes; nil
// when nothing does.
func ResumePatch(obj *unstructured.Unstructured) (map[string]any, string) {
	patch := map[string]any{}
	var undone []string
	if _, ok := suspend.Reason(obj); ok {
		patch["metadata"] = map[string]any{"annotations": map[string]any{suspend.Annotation: nil}}
		undone = append(undone, "the "+suspend.Annotation+" annotation")
	}
	if v, _, _ := unstructured.NestedBool(obj.Object, "spec", "suspend"); v {
		patch["spec"] = map[string]any{"suspend": nil}
		undone = append(undone, "spec.suspend")
	}
	if len(undone) == 0 {
		return nil, ""
	}
	return patch, strings.Join(undone, " and ")
}
