package hold

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entry(manager string, op metav1.ManagedFieldsOperationType, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: subresource, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

// Entries in the shape the API server writes them (taken from a real apply in the integration tests).
func TestOwnedFieldsReadsOnlyTheControllersApplyEntry(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{
		entry("kubectl-create", metav1.ManagedFieldsOperationUpdate, "",
			`{"f:metadata":{"f:annotations":{".":{},"f:gating.sluice.dev/gates":{},"f:reconcile.fluxcd.io/suspended":{}}},"f:spec":{".":{},"f:suspend":{}}}`),
		entry(FieldManager, metav1.ManagedFieldsOperationApply, "",
			`{"f:metadata":{"f:annotations":{"f:gating.sluice.dev/hold":{}}},"f:spec":{"f:suspend":{}}}`),
		entry(FieldManager, metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:conditions":{}}}`),
	}
	assert.Equal(t, Owned{Record: true, Spec: true}, OwnedFields(entries))
	assert.Equal(t, Owned{}, OwnedFields(entries[:1]))
	assert.Equal(t, Owned{}, OwnedFields([]metav1.ManagedFieldsEntry{entry(FieldManager, metav1.ManagedFieldsOperationApply, "", `not json`)}))
}

func TestTrimManagedFieldsKeepsOnlyTheControllersEntry(t *testing.T) {
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		entry("flux", metav1.ManagedFieldsOperationUpdate, "", `{"f:spec":{}}`),
		entry(FieldManager, metav1.ManagedFieldsOperationApply, "", `{"f:spec":{"f:suspend":{}}}`),
		entry("kustomize-controller", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{}}`),
	}}}
	before := OwnedFields(obj.ManagedFields)
	got, err := TrimManagedFields(obj)
	assert.NoError(t, err)
	trimmed := got.(*metav1.PartialObjectMetadata)
	assert.Len(t, trimmed.ManagedFields, 1)
	assert.Equal(t, before, OwnedFields(trimmed.ManagedFields))
	_, err = TrimManagedFields("not an object")
	assert.NoError(t, err)
}
