package manager

import (
	"context"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	sluiceinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions"
)

// References holds the informer factories for objects that other objects name: the ScmRepository
// and ScmProvider of a CommitStatus, the Gates and CommitStatuses a PromotionStrategy reads, the
// Secrets they name. They are scoped by --namespace only, never by --watch-label-selector: a shard
// owns the objects carrying its label, but what they reference is shared and carries no shard
// label. Like the main factories, they start before the leader election, so a standby is warm.
type References struct {
	Kube     kubeinformers.SharedInformerFactory
	Sluice   sluiceinformers.SharedInformerFactory
	Metadata metadatainformer.SharedInformerFactory
}

// newInformerFactories builds the main factories, scoped by --namespace and
// --watch-label-selector, and the references factories. Without a selector both scopes are the
// same, so the references are the main factories and no object is watched twice.
func (m *Manager) newInformerFactories() {
	opts := m.Options
	selector := func(o *metav1.ListOptions) { o.LabelSelector = opts.WatchLabelSelector }
	// Resync is off: handlers skip unchanged objects anyway, and time-driven work requeues itself.
	m.KubeInformers = kubeinformers.NewSharedInformerFactoryWithOptions(m.Kube, 0,
		kubeinformers.WithNamespace(opts.Namespace), kubeinformers.WithTweakListOptions(selector))
	m.SluiceInformers = sluiceinformers.NewSharedInformerFactoryWithOptions(m.Sluice, 0,
		sluiceinformers.WithNamespace(opts.Namespace), sluiceinformers.WithTweakListOptions(selector))
	m.MetadataInformers = metadatainformer.NewFilteredSharedInformerFactory(m.Metadata, 0, opts.Namespace, selector)
	m.DynamicInformers = dynamicinformer.NewFilteredDynamicSharedInformerFactory(m.Dynamic, 0, opts.Namespace, selector)

	if opts.WatchLabelSelector == "" {
		m.ReferenceInformers = References{Kube: m.KubeInformers, Sluice: m.SluiceInformers, Metadata: m.MetadataInformers}
		return
	}
	m.ReferenceInformers = References{
		Kube:     kubeinformers.NewSharedInformerFactoryWithOptions(m.Kube, 0, kubeinformers.WithNamespace(opts.Namespace)),
		Sluice:   sluiceinformers.NewSharedInformerFactoryWithOptions(m.Sluice, 0, sluiceinformers.WithNamespace(opts.Namespace)),
		Metadata: metadatainformer.NewFilteredSharedInformerFactory(m.Metadata, 0, opts.Namespace, nil),
	}
}

// factory is what Run needs of any informer factory: start it, and wait for its caches.
type factory struct {
	start    func(stop <-chan struct{})
	unsynced func(stop <-chan struct{}) []string
}

// factories lists every factory once, references included when they are factories of their own.
func (m *Manager) factories() []factory {
	out := []factory{
		typed(m.KubeInformers.Start, m.KubeInformers.WaitForCacheSync),
		typed(m.SluiceInformers.Start, m.SluiceInformers.WaitForCacheSync),
		byResource(m.MetadataInformers.Start, m.MetadataInformers.WaitForCacheSync),
		byResource(m.DynamicInformers.Start, m.DynamicInformers.WaitForCacheSync),
	}
	if m.ReferenceInformers.Sluice != m.SluiceInformers {
		r := m.ReferenceInformers
		out = append(out,
			typed(r.Kube.Start, r.Kube.WaitForCacheSync),
			typed(r.Sluice.Start, r.Sluice.WaitForCacheSync),
			byResource(r.Metadata.Start, r.Metadata.WaitForCacheSync))
	}
	return out
}

func typed(start func(<-chan struct{}), wait func(<-chan struct{}) map[reflect.Type]bool) factory {
	return factory{start: start, unsynced: func(stop <-chan struct{}) []string {
		var out []string
		for typ, ok := range wait(stop) {
			if !ok {
				out = append(out, typ.String())
			}
		}
		return out
	}}
}

func byResource(start func(<-chan struct{}), wait func(<-chan struct{}) map[schema.GroupVersionResource]bool) factory {
	return factory{start: start, unsynced: func(stop <-chan struct{}) []string {
		var out []string
		for gvr, ok := range wait(stop) {
			if !ok {
				out = append(out, gvr.String())
			}
		}
		return out
	}}
}

// startInformers starts every informer requested so far.
func (m *Manager) startInformers(stop <-chan struct{}) {
	for _, f := range m.factories() {
		f.start(stop)
	}
}

// waitForCaches waits for every started informer and for the caches added with WaitFor.
func (m *Manager) waitForCaches(ctx context.Context) error {
	var unsynced []string
	for _, f := range m.factories() {
		unsynced = append(unsynced, f.unsynced(ctx.Done())...)
	}
	if !cache.WaitForCacheSync(ctx.Done(), m.waitFor...) {
		unsynced = append(unsynced, "additional caches")
	}
	switch {
	case len(unsynced) == 0:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("caches did not sync: %v", unsynced)
}
