package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/sluicehq/sluice/pkg/manifest"
)

// PreviousAnnotation holds, on an object its owner let a release take over, the object's content
// from before. Delete gives such an object back, restoring that content, instead of deleting it.
const PreviousAnnotation = "rollback.sluice.dev/previous"

// Get returns the live object of ref, or nil when it, or its kind, does not exist.
func (a *Applier) Get(ctx context.Context, ref manifest.Ref) (*unstructured.Unstructured, error) {
	ri, err := a.resource(ref)
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Object: ref, Err: err}
	}
	live, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Object: ref, Err: err}
	}
	return live, nil
}

// Managers names who manages live, from its managedFields, for messages.
func Managers(live *unstructured.Unstructured) string {
	var names []string
	for _, f := range live.GetManagedFields() {
		names = append(names, f.Manager)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 {
		return "no field manager recorded"
	}
	return strings.Join(names, ", ")
}

// RecordPrevious writes live's content as it is into its PreviousAnnotation, before a release
// takes it over. It writes with a field manager of its own, so the release's later applies,
// which do not carry the annotation, keep it.
func (a *Applier) RecordPrevious(ctx context.Context, live *unstructured.Unstructured) error {
	ref := manifest.RefOf(live)
	previous, err := json.Marshal(contentOf(live))
	if err != nil {
		return &Error{Object: ref, Err: err}
	}
	patch := &unstructured.Unstructured{}
	patch.SetAPIVersion(live.GetAPIVersion())
	patch.SetKind(live.GetKind())
	patch.SetName(live.GetName())
	patch.SetNamespace(live.GetNamespace())
	patch.SetAnnotations(map[string]string{PreviousAnnotation: string(previous)})
	ri, err := a.resource(ref)
	if err != nil {
		return &Error{Object: ref, Err: err}
	}
	_, err = ri.Apply(ctx, live.GetName(), patch, metav1.ApplyOptions{FieldManager: a.FieldManager + "-adoption", Force: true})
	if err != nil {
		return &Error{Object: ref, Err: fmt.Errorf("record its content before the takeover: %w", err)}
	}
	return nil
}

// contentOf is what a person wrote of obj: no status, no fields the API server keeps.
func contentOf(obj *unstructured.Unstructured) map[string]any {
	c := obj.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	annotations := c.GetAnnotations()
	delete(annotations, PreviousAnnotation)
	c.SetAnnotations(annotations)
	return c.Object
}

// restore puts back the content live had before a release took it over.
func (a *Applier) restore(ctx context.Context, ri dynamic.ResourceInterface, live *unstructured.Unstructured) error {
	var previous map[string]any
	if err := json.Unmarshal([]byte(live.GetAnnotations()[PreviousAnnotation]), &previous); err != nil {
		return fmt.Errorf("its %s annotation does not hold an object: %w", PreviousAnnotation, err)
	}
	obj := &unstructured.Unstructured{Object: previous}
	obj.SetResourceVersion(live.GetResourceVersion())
	obj.SetUID(live.GetUID())
	if _, err := ri.Update(ctx, obj, metav1.UpdateOptions{FieldManager: a.FieldManager}); err != nil {
		return fmt.Errorf("restore its content from before the takeover: %w", err)
	}
	return nil
}
