package manager

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

// trackConditions reports the conditions of the Sluice objects in every cache the controller
// started (sluice_object_condition), once they synced and the set of informers is known.
func (m *Manager) trackConditions(ctx context.Context) {
	// The caches synced already, so this returns at once, keyed by the informers' object types.
	for typ := range m.SluiceInformers.WaitForCacheSync(ctx.Done()) {
		if typ.Kind() != reflect.Pointer {
			continue
		}
		obj, ok := reflect.New(typ.Elem()).Interface().(runtime.Object)
		if !ok {
			continue
		}
		// For a type it has an informer for, the factory returns that informer without calling newFunc.
		m.Metrics.Conditions.Track(m.SluiceInformers.InformerFor(obj, nil).GetStore())
	}
}
