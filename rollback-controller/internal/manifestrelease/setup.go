package manifestrelease

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/sluicehq/sluice/pkg/apply"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/health/library"
	"github.com/sluicehq/sluice/pkg/runtime/handler"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/pkg/snapshot"
)

// ControllerName names the queue, logs and metrics of ManifestReleases.
const ControllerName = "manifestreleases"

// Config is the ManifestRelease reconciler's own configuration.
type Config struct {
	// GitCacheDir keeps the repositories git sources are read from.
	GitCacheDir string
	// MaxChunks is the most Secrets one snapshot may take.
	MaxChunks int
	// MaxManifestBytes bounds the manifests read from one source.
	MaxManifestBytes int64
	// RecheckInterval paces releases stalled on something a person must do in the cluster.
	RecheckInterval time.Duration
}

// AddFlags registers the flags on fs.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.GitCacheDir, "manifest-git-cache-dir", filepath.Join(os.TempDir(), "sluice-rollback-manifests-git"),
		"Folder of the git repositories ManifestRelease sources are read from; it survives restarts.")
	fs.IntVar(&c.MaxChunks, "snapshot-max-chunks", snapshot.DefaultMaxChunks,
		"Most Secrets (of at most 1 MiB each) one ManifestRelease snapshot may take; a larger version is refused, Stalled.")
	fs.Int64Var(&c.MaxManifestBytes, "manifest-max-bytes", 64<<20,
		"Most bytes of manifests read from one ManifestRelease source.")
	fs.DurationVar(&c.RecheckInterval, "release-recheck-interval", time.Minute,
		"How often a ManifestRelease stalled on the cluster (a CRD that still has objects) is looked at again.")
}

// Validate reports unusable values.
func (c Config) Validate() error {
	if c.GitCacheDir == "" || c.MaxChunks < 1 || c.MaxManifestBytes < 1 || c.RecheckInterval <= 0 {
		return fmt.Errorf("--manifest-git-cache-dir must be set, and --snapshot-max-chunks, --manifest-max-bytes and --release-recheck-interval positive")
	}
	return nil
}

// Setup registers the ManifestRelease reconciler.
func Setup(m *manager.Manager, cfg Config) error {
	cache, err := git.NewCache(cfg.GitCacheDir, m.Log)
	if err != nil {
		return err
	}
	evaluate, err := healthEvaluator()
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(m.Kube.Discovery()))
	informer := m.SluiceInformers.Rollback().V1alpha1().ManifestReleases()
	r := &Reconciler{
		Releases: informer.Lister(),
		Client:   m.Sluice,
		Kube:     m.Kube,
		Sources:  &Sources{Kube: m.Kube, Sluice: m.Sluice, Git: cache, OCI: &OCIReader{}, MaxSize: cfg.MaxManifestBytes},
		Snapshots: &snapshot.Store{Client: m.Kube.CoreV1(), FieldManager: FieldManager,
			Options: snapshot.Options{MaxChunks: cfg.MaxChunks}},
		Applier:        &apply.Applier{Dynamic: m.Dynamic, Mapper: mapper, FieldManager: FieldManager, Health: evaluate},
		Recorder:       m.Recorder,
		Metrics:        NewMetrics(m.Metrics),
		StalledRecheck: cfg.RecheckInterval,
	}
	c := m.NewController(ControllerName, r)
	_, err = informer.Informer().AddEventHandler(enqueueOnChange(c))
	return err
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

// enqueueOnChange enqueues a release when a person changed it (spec, labels or annotations)
// or it came or went; the controller's own status writes do not bring it back.
func enqueueOnChange(q handler.Enqueuer) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if o, ok := handler.Object(obj); ok {
			q.Enqueue(handler.Key(o))
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		DeleteFunc: enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			o, okOld := handler.Object(oldObj)
			n, okNew := handler.Object(newObj)
			if !okOld || !okNew || changedByPerson(o, n) {
				enqueue(newObj)
			}
		},
	}
}

func changedByPerson(old, new metav1.Object) bool {
	return old.GetGeneration() != new.GetGeneration() || !maps.Equal(old.GetAnnotations(), new.GetAnnotations()) ||
		!maps.Equal(old.GetLabels(), new.GetLabels()) || new.GetDeletionTimestamp() != nil
}
