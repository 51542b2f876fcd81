package holding

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// applyStrict applies obj with strict field validation: a hold whose field the kind's CRD does
// not declare (an Argo CD older than 3.1 has no spec.syncPolicy.automated.enabled) is refused
// with an error naming the field, rather than pruned by the API server and so never in effect.
func applyStrict(ctx context.Context, target dynamic.ResourceInterface, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions) error {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	patch := opts.ToPatchOptions()
	patch.FieldValidation = metav1.FieldValidationStrict
	_, err = target.Patch(ctx, name, types.ApplyPatchType, data, patch)
	return err
}
