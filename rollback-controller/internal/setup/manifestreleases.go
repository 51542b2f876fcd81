package setup

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/health/library"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
	"github.com/sluicehq/sluice/rollback-controller/internal/manifestrelease"
)

// ManifestReleases registers the ManifestRelease reconciler alone, for tests of releases; Setup
// registers every reconciler.
func ManifestReleases(m *manager.Manager, cfg Config) error {
	w, err := newWiring(m, cfg)
	if err != nil {
		return err
	}
	return w.addManifestReleases()
}

// addManifestReleases registers the ManifestRelease reconciler. A release comes back when it
// comes or goes or a person changes it (spec, labels, annotations), not on the controller's own
// status writes: each reconcile reads the live release and asks for its own requeue.
func (w *wiring) addManifestReleases() error {
	m, cfg := w.m, w.cfg
	cache, err := git.NewCache(cfg.ManifestGitCacheDir, m.Log)
	if err != nil {
		return fmt.Errorf("git cache in %s: %w", cfg.ManifestGitCacheDir, err)
	}
	evaluate, err := healthEvaluator()
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(m.Kube.Discovery()))
	informer := m.SluiceInformers.Rollback().V1alpha1().ManifestReleases()
	fieldManager := manifestrelease.FieldManager
	watches := &manifestrelease.SourceWatches{Log: m.Log.With("controller", ManifestReleaseControllerName)}
	c := m.NewController(ManifestReleaseControllerName, &manifestrelease.Reconciler{
		Releases: informer.Lister(),
		Client:   m.Sluice,
		Kube:     m.Kube,
		Sources: &manifestrelease.Sources{Kube: m.Kube, Sluice: m.Sluice, Git: cache, OCI: &manifestrelease.OCIReader{},
			MaxSize: cfg.ManifestMaxBytes},
		Snapshots: &snapshot.Store{Client: m.Kube.CoreV1(), FieldManager: fieldManager,
			Options: snapshot.Options{MaxChunks: cfg.SnapshotMaxChunks}},
		Applier:        &apply.Applier{Dynamic: m.Dynamic, Mapper: mapper, FieldManager: fieldManager, Health: evaluate},
		Recorder:       m.Recorder,
		Metrics:        manifestrelease.NewMetrics(m.Metrics),
		StalledRecheck: cfg.ReleaseRecheck,
		Clock:          m.Clock,
		Log:            m.Log.With("controller", ManifestReleaseControllerName),
		Identities:     &manifestrelease.Identities{Config: m.RESTConfig, DefaultServiceAccount: cfg.DefaultServiceAccount},
		SourceWatches:  watches,
		Progress:       manifestrelease.NewProgress(),
	})
	watches.Enqueue = c.Enqueue
	m.AddRunnable(watches.Run)
	return handler.Register(handler.Watch(informer.Informer(), handler.OnSpecOrMetadataChange(handler.EnqueueObject(c))))
}

// healthEvaluator judges objects with the built-in CEL library, kstatus otherwise.
func healthEvaluator() (func(*unstructured.Unstructured) health.Result, error) {
	compiler, err := cel.NewCompiler()
	if err != nil {
		return nil, err
	}
	builtin, err := library.Builtin()
	if err != nil {
		return nil, err
	}
	resolver, err := health.Resolve(nil, nil, builtin)
	if err != nil {
		return nil, err
	}
	return health.NewEvaluator(compiler, resolver).Evaluate, nil
}
