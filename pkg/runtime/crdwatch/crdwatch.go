// Package crdwatch tells a controller when CustomResourceDefinitions come, change or go, so that a
// kind installed after the controller started is watched without a restart and without polling
// discovery.
package crdwatch

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/pkg/runtime/handler"
)

// Resource is where CRDs are served. Only their metadata is watched: the name says which resource
// a CRD defines, and a schema can be large.
var Resource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Event is one change to a CRD.
type Event struct {
	// Resource is the resource the CRD defines.
	Resource schema.GroupResource
	// Initial is set for the CRDs already installed when the watch starts.
	Initial bool
	// Deleted is set when the CRD was removed.
	Deleted bool
}

// Watch returns a runnable for manager.AddRunnable that calls onChange for every CRD event until
// its context ends. onChange runs on the informer's goroutine and must return quickly.
//
// A CRD is served by discovery a moment after it appears here, so a caller that looks the kind up
// at once should be ready to look again shortly after.
func Watch(client metadata.Interface, onChange func(Event)) (func(context.Context) error, error) {
	informer := metadatainformer.NewFilteredMetadataInformer(client, Resource, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	send := func(obj any, initial, deleted bool) {
		m, ok := handler.Object(obj)
		if !ok {
			return
		}
		onChange(Event{Resource: ResourceOf(m.GetName()), Initial: initial, Deleted: deleted})
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { send(obj, initial, false) },
		UpdateFunc: func(_, obj any) { send(obj, false, false) },
		DeleteFunc: func(obj any) { send(obj, false, true) },
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		informer.RunWithContext(ctx)
		return nil
	}, nil
}

// ResourceOf reads the resource a CRD defines from its name, which the API server requires to be
// <plural>.<group>.
func ResourceOf(crdName string) schema.GroupResource {
	plural, group, _ := strings.Cut(crdName, ".")
	return schema.GroupResource{Group: group, Resource: plural}
}
