package manifestrelease

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	rollbacklisters "github.com/sluicehq/sluice/api/generated/listers/rollback/v1alpha1"
	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

// Reconciler reconciles ManifestReleases, one step per reconcile.
type Reconciler struct {
	Releases  rollbacklisters.ManifestReleaseLister
	Client    sluice.Interface
	Kube      kubernetes.Interface
	Sources   *Sources
	Snapshots *snapshot.Store
	Applier   *apply.Applier
	Recorder  record.EventRecorder
	Metrics   *Metrics
	// StalledRecheck is how soon a release blocked on something a person must do in the cluster
	// (a CRD that still has objects) is looked at again.
	StalledRecheck time.Duration
	// Clock is the time: the manager's in a process, a fake one in tests.
	Clock clock.PassiveClock
	// Identities impersonates the ServiceAccount each release acts as; nil lets releases that
	// name none act with the controller's own rights.
	Identities *Identities

	// SourceWatches wakes a release waiting for its source ConfigMap when it is created; nil
	// leaves such a release to its backoff.
	SourceWatches *SourceWatches

	// Log records upgrades, test results and rollbacks (INFO) and failures (ERROR).
	Log *slog.Logger

	// Progress keeps what the steps of each release found until its next step.
	Progress *Progress
}

// Identities gives each release the clients of the ServiceAccount it acts as, impersonated (as
// Flux's kustomize-controller does with spec.serviceAccountName), so that a release can do in the
// cluster only what its ServiceAccount may: the controller's own rights are not lent to tenants.
type Identities struct {
	// Config is the controller's own; impersonating configs are copies of it.
	Config *rest.Config
	// DefaultServiceAccount is the ServiceAccount of a release that names none
	// (--default-service-account). Empty lets such a release act with the controller's own rights.
	DefaultServiceAccount string

	mu      sync.Mutex
	clients map[string]*identityClients
}

// identityClients are the clients of one impersonated ServiceAccount, kept for the next
// reconcile: client-go shares the TLS transport underneath, so they cost little.
type identityClients struct {
	kube    kubernetes.Interface
	sluice  sluice.Interface
	dynamic dynamic.Interface
}

// ServiceAccountOf is the ServiceAccount mr acts as, "" for the controller's own rights.
func (ids *Identities) ServiceAccountOf(mr *rollbackv1.ManifestRelease) string {
	if mr.Spec.ServiceAccountName != "" {
		return mr.Spec.ServiceAccountName
	}
	if ids == nil {
		return ""
	}
	return ids.DefaultServiceAccount
}

func (ids *Identities) clientsFor(namespace, serviceAccount string) (*identityClients, error) {
	key := namespace + "/" + serviceAccount
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if c, ok := ids.clients[key]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(ids.Config)
	// The API server adds the ServiceAccount's groups itself when no group is named, so the
	// controller needs impersonate on serviceaccounts only, not on groups.
	cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", namespace, serviceAccount)}
	c := &identityClients{}
	var err error
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.sluice, err = sluice.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if ids.clients == nil {
		ids.clients = map[string]*identityClients{}
	}
	ids.clients[key] = c
	return c, nil
}

// identity is what a release acts as: the clients of the ServiceAccount it acts as,
// impersonated (or the controller's own), its snapshots bound to it, and who it is, for access
// reviews and messages. Every read and write on the release's behalf (source, snapshots, apply,
// tests, waits, prune, rollback) takes it as a parameter; status writes, Events and metrics stay
// the controller's own.
type identity struct {
	Sources   *Sources
	Snapshots *snapshot.Store
	Applier   *apply.Applier
	Kube      kubernetes.Interface
	Reviewer  apply.Reviewer
}

// identityOf builds the identity mr acts as.
func (r *Reconciler) identityOf(mr *rollbackv1.ManifestRelease) (*identity, error) {
	// Snapshots are bound to this release's UID: a Secret it did not write is never read,
	// reused or deleted.
	var owned snapshot.Store
	if r.Snapshots != nil {
		owned = *r.Snapshots
	}
	owned.Owner = mr.UID
	// And to the digest chain its status records, which only this controller writes: a
	// Secret that claims the release's UID but holds other manifests is not its snapshot.
	owned.Digests = chainDigests(mr.Status)
	as := &identity{Sources: r.Sources, Snapshots: &owned, Applier: r.Applier, Kube: r.Kube}
	sa := r.Identities.ServiceAccountOf(mr)
	if sa == "" {
		if r.Kube != nil {
			as.Reviewer = apply.Reviewer{Reviews: r.Kube.AuthorizationV1().SelfSubjectAccessReviews(), User: "the rollback-controller"}
		}
		return as, nil
	}
	if r.Identities == nil || r.Identities.Config == nil {
		return nil, fmt.Errorf("release names ServiceAccount %q but the controller was started without a config to impersonate it", sa)
	}
	c, err := r.Identities.clientsFor(mr.Namespace, sa)
	if err != nil {
		return nil, err
	}
	sources := *r.Sources
	sources.Kube, sources.Sluice = c.kube, c.sluice
	owned.Client = c.kube.CoreV1()
	applier := *r.Applier
	applier.Dynamic = c.dynamic
	as.Kube, as.Sources, as.Applier = c.kube, &sources, &applier
	as.Reviewer = apply.Reviewer{Reviews: c.kube.AuthorizationV1().SelfSubjectAccessReviews(),
		User: fmt.Sprintf("ServiceAccount %s/%s", mr.Namespace, sa)}
	return as, nil
}

func (r *Reconciler) logger() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// Metrics of ManifestReleases.
type Metrics struct {
	// Upgrades counts finished upgrades by result: succeeded, rolled_back or failed (nothing to
	// roll back to).
	Upgrades *prometheus.CounterVec
	// Tests counts test runs by result: passed or failed.
	Tests *prometheus.CounterVec
	// Rollbacks counts finished rollbacks by trigger: automatic or manual.
	Rollbacks *prometheus.CounterVec
	// SnapshotBytes is the size of the newest snapshot, compressed (what the Secrets hold) and
	// uncompressed.
	SnapshotBytes *prometheus.GaugeVec
	// SnapshotSecrets is how many Secrets the newest snapshot takes.
	SnapshotSecrets *prometheus.GaugeVec
}

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Upgrades: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_manifestrelease_upgrades_total",
			Help: "Finished ManifestRelease upgrades by result (succeeded, rolled_back, failed).",
		}, []string{"namespace", "name", "result"}),
		Tests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_manifestrelease_tests_total",
			Help: "ManifestRelease test runs by result (passed, failed).",
		}, []string{"namespace", "name", "result"}),
		Rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_manifestrelease_rollbacks_total",
			Help: "Finished ManifestRelease rollbacks by trigger (automatic, manual).",
		}, []string{"namespace", "name", "trigger"}),
		SnapshotBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_manifestrelease_snapshot_bytes",
			Help: "Size of the newest snapshot of a ManifestRelease, compressed or uncompressed.",
		}, []string{"namespace", "name", "encoding"}),
		SnapshotSecrets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_manifestrelease_snapshot_secrets",
			Help: "Secrets taken by the newest snapshot of a ManifestRelease.",
		}, []string{"namespace", "name"}),
	}
	reg.MustRegister(m.Upgrades, m.Tests, m.Rollbacks, m.SnapshotBytes, m.SnapshotSecrets)
	return m
}

// Forget drops the series of a deleted release.
func (m *Metrics) Forget(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "name": name}
	m.Upgrades.DeletePartialMatch(labels)
	m.Tests.DeletePartialMatch(labels)
	m.Rollbacks.DeletePartialMatch(labels)
	m.SnapshotBytes.DeletePartialMatch(labels)
	m.SnapshotSecrets.DeletePartialMatch(labels)
}
