package manifestrelease

import (
	"fmt"
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

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

// actingFor returns a copy of the reconciler whose every read and write of the cluster on behalf
// of mr (source, snapshots, apply, tests, waits, prune, rollback) goes through the clients of
// the ServiceAccount mr acts as. Status writes, Events and metrics stay the controller's own.
func (r *Reconciler) actingFor(mr *rollbackv1.ManifestRelease) (*Reconciler, error) {
	acting := *r
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
	acting.Snapshots = &owned
	sa := r.Identities.ServiceAccountOf(mr)
	if sa == "" {
		if r.Kube != nil {
			acting.reviewer = apply.Reviewer{Reviews: r.Kube.AuthorizationV1().SelfSubjectAccessReviews(), User: "the rollback-controller"}
		}
		return &acting, nil
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
	snapshots := owned
	snapshots.Client = c.kube.CoreV1()
	applier := *r.Applier
	applier.Dynamic = c.dynamic
	acting.Kube, acting.Sources, acting.Snapshots, acting.Applier = c.kube, &sources, &snapshots, &applier
	acting.reviewer = apply.Reviewer{Reviews: c.kube.AuthorizationV1().SelfSubjectAccessReviews(),
		User: fmt.Sprintf("ServiceAccount %s/%s", mr.Namespace, sa)}
	return &acting, nil
}
