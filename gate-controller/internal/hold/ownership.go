package hold

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/suspend"
)

// FieldManager is the name the controller applies targets under.
const FieldManager = "gate-controller"

// Owned says which of the fields the controller manages it owns on a target, by the API server's
// managedFields.
type Owned struct {
	Record     bool
	Annotation bool
	Spec       bool
}

func (o Owned) any() bool { return o.Record || o.Annotation || o.Spec }

// OwnedFields reads the controller's apply entry in managedFields.
func OwnedFields(entries []metav1.ManagedFieldsEntry) Owned {
	var owned Owned
	for _, e := range entries {
		if !isOurs(e) || e.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Annotations map[string]json.RawMessage `json:"f:annotations"`
			} `json:"f:metadata"`
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if err := json.Unmarshal(e.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		_, owned.Record = fields.Metadata.Annotations["f:"+RecordAnnotation]
		_, owned.Annotation = fields.Metadata.Annotations["f:"+suspend.Annotation]
		owned.Spec = ownsSpecField(fields.Spec)
	}
	return owned
}

func isOurs(e metav1.ManagedFieldsEntry) bool {
	return e.Manager == FieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
}

// TrimManagedFields drops every managedFields entry but the controller's own from an object in
// an informer cache: the controller reads only its own, and with thousands of targets the
// others are most of the memory a metadata-only cache holds.
func TrimManagedFields(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	entries := o.GetManagedFields()
	kept := entries[:0:0]
	for _, e := range entries {
		if isOurs(e) {
			kept = append(kept, e)
		}
	}
	if len(kept) != len(entries) {
		o.SetManagedFields(kept)
	}
	return obj, nil
}
