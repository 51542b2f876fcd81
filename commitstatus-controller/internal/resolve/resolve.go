// Package resolve finds where a CommitStatus goes: its ScmRepository, that repository's
// ScmProvider, and a ready provider client built from the ScmProvider's Secret.
//
// Secrets and CA bundles are read with get only, on demand, and never listed or watched: the
// controller's ServiceAccount needs no permission to enumerate Secrets. Each ScmProvider's client
// is built once and reused; its Secret is read again at most once per CredentialsTTL, so a
// thousand CommitStatuses behind one provider cost one Secret read, and a rotated token is in use
// within that time.
package resolve

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	scmlisters "github.com/sluicehq/sluice/api/generated/listers/scm/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
	"github.com/sluicehq/sluice/pkg/scm/scmmetrics"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// DefaultCredentialsTTL is how long a Secret read is reused.
const DefaultCredentialsTTL = 30 * time.Second

// Resolver turns a CommitStatus into a Target. It is safe for concurrent use.
type Resolver struct {
	Repositories scmlisters.ScmRepositoryLister
	Providers    scmlisters.ScmProviderLister
	// Kube reads Secrets and ConfigMaps, with get only.
	Kube kubernetes.Interface

	// Metrics, when set, counts every call and HTTP answer of the providers built here.
	Metrics *scmmetrics.Metrics
	// Limiters shares one rate limiter per ScmProvider; nil means ratelimit.Default.
	Limiters *ratelimit.Registry
	// MaxWait is how long a call may wait for an SCM's rate-limit pause before it gives up and
	// the CommitStatus is requeued; zero means the provider default.
	MaxWait time.Duration
	// Transport is the base transport of every provider; nil means a clone of the default.
	Transport http.RoundTripper
	// UserAgent is sent to the SCMs.
	UserAgent string
	// CredentialsTTL is how long a Secret read is reused; zero means DefaultCredentialsTTL.
	CredentialsTTL time.Duration
	// New builds a provider; nil means scm.New.
	New func(name string, cfg scm.Config) (scm.Provider, error)
	// Clock times the credentials cache; nil means the real clock.
	Clock clock.PassiveClock

	mu      sync.Mutex
	clients map[string]*client
	// epochs counts the Invalidate calls per ScmProvider.
	epochs map[string]uint64
	flight singleflight.Group
}

// Target is where a CommitStatus is mirrored.
type Target struct {
	// ProviderKey is the ScmProvider's namespace/name.
	ProviderKey  string
	ProviderType scmv1alpha1.ScmProviderType
	Provider     scm.Provider
	Repository   scm.Repository
	// Endpoint names where statuses land (type, base URL, GitHub App), never credentials. A
	// change of endpoint means the SCM does not hold what was synced before.
	Endpoint string
	// CredentialsVersion changes whenever the Secret or CA bundle in use changes.
	CredentialsVersion string
	// InCluster is true when the provider keeps commit statuses only in the cluster (plain git).
	InCluster bool
	// Suspended is set when the ScmRepository or ScmProvider is suspended.
	Suspended *suspend.State
}

// client is the cached provider of one ScmProvider, or why it could not be built.
type client struct {
	spec string
	// epoch is the ScmProvider's Invalidate count when the read began: an Invalidate during the
	// read makes its answer stale.
	epoch       uint64
	credentials string
	checked     time.Time
	provider    scm.Provider
	err         *Error
}

func (r *Resolver) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}

func (r *Resolver) ttl() time.Duration {
	if r.CredentialsTTL > 0 {
		return r.CredentialsTTL
	}
	return DefaultCredentialsTTL
}

// Resolve returns the Target of cs, or an *Error saying what a person must fix.
func (r *Resolver) Resolve(ctx context.Context, cs *commitstatusv1alpha1.CommitStatus) (*Target, *Error) {
	t, repo, p, rerr := r.locate(cs)
	if rerr != nil {
		return nil, rerr
	}
	if s := suspendedBy("ScmProvider", p, p.Spec.Suspend); s != nil {
		t.Suspended = s
		return t, nil
	}
	if s := suspendedBy("ScmRepository", repo, repo.Spec.Suspend); s != nil {
		t.Suspended = s
		return t, nil
	}

	c, rerr := r.client(ctx, p)
	if rerr != nil {
		return nil, rerr
	}
	t.Provider = c.provider
	t.CredentialsVersion = c.credentials
	t.InCluster = !c.provider.Capabilities().CommitStatuses
	return t, nil
}

// Locate returns where cs would land (provider, repository, endpoint) from the listers alone:
// no credentials are read and no provider is built. A suspended CommitStatus uses it to tell
// whether the SCM still holds what its spec asks.
func (r *Resolver) Locate(cs *commitstatusv1alpha1.CommitStatus) (*Target, *Error) {
	t, _, _, rerr := r.locate(cs)
	return t, rerr
}

func (r *Resolver) locate(cs *commitstatusv1alpha1.CommitStatus) (*Target, *scmv1alpha1.ScmRepository, *scmv1alpha1.ScmProvider, *Error) {
	ns := cs.Namespace
	repoName := cs.Spec.RepositoryRef.Name
	repo, err := r.Repositories.ScmRepositories(ns).Get(repoName)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil, &Error{Reason: ReasonRepositoryNotFound, Message: fmt.Sprintf(
			"ScmRepository %q does not exist in namespace %q: create it, or fix spec.repositoryRef.name", repoName, ns)}
	}
	if err != nil {
		return nil, nil, nil, &Error{Reason: ReasonLookupFailed, Transient: true, Message: fmt.Sprintf("reading ScmRepository %q: %v", repoName, err)}
	}
	providerName := repo.Spec.ProviderRef.Name
	p, err := r.Providers.ScmProviders(ns).Get(providerName)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil, &Error{Reason: ReasonProviderNotFound, Message: fmt.Sprintf(
			"ScmProvider %q, named by ScmRepository %q, does not exist in namespace %q: create it, or fix the ScmRepository's spec.providerRef.name",
			providerName, repoName, ns)}
	}
	if err != nil {
		return nil, nil, nil, &Error{Reason: ReasonLookupFailed, Transient: true, Message: fmt.Sprintf("reading ScmProvider %q: %v", providerName, err)}
	}
	return &Target{
		ProviderKey:  ns + "/" + providerName,
		ProviderType: p.Spec.Type,
		Repository:   scm.RepositoryFor(repo),
		Endpoint:     endpoint(p),
	}, repo, p, nil
}

// CheckProvider reports whether p is usable, or an *Error saying what a person must fix: its
// type is supported, its spec (base URL, rate limit, GitHub App) is valid, and its Secret and CA
// bundle exist and hold the keys the type needs. It shares the client cache with Resolve, so a
// check costs at most one Secret read per CredentialsTTL. Building a provider sends nothing:
// the SCM is never called here, so checks spend none of its API quota.
func (r *Resolver) CheckProvider(ctx context.Context, p *scmv1alpha1.ScmProvider) *Error {
	_, err := r.client(ctx, p)
	return err
}

// Reasons a suspended ScmRepository or ScmProvider gives in the CommitStatus's Suspended condition.
const (
	ReasonProviderSuspended   = "ScmProviderSuspended"
	ReasonRepositorySuspended = "ScmRepositorySuspended"
)

func suspendedBy(kind string, obj metav1.Object, specSuspend bool) *suspend.State {
	s := suspend.Get(obj, specSuspend)
	if !s.Suspended {
		return nil
	}
	reason := ReasonProviderSuspended
	if kind == "ScmRepository" {
		reason = ReasonRepositorySuspended
	}
	return &suspend.State{
		Suspended: true,
		Reason:    reason,
		Message:   fmt.Sprintf("%s %q is suspended (%s); nothing is sent until it is resumed", kind, obj.GetName(), s.Message),
	}
}

// endpoint identifies where statuses land: the same type and base URL reach the same SCM, and a
// GitHub App writes check runs where a token writes statuses.
func endpoint(p *scmv1alpha1.ScmProvider) string {
	e := string(p.Spec.Type) + " " + strings.TrimRight(p.Spec.BaseURL, "/")
	if app := p.Spec.GitHubApp; app != nil {
		e += fmt.Sprintf(" app=%d/%d", app.AppID, app.InstallationID)
	}
	return e
}

// client returns the provider of p, building it when p's spec or credentials changed. Concurrent
// callers for one ScmProvider share a single Secret read.
func (r *Resolver) client(ctx context.Context, p *scmv1alpha1.ScmProvider) (*client, *Error) {
	key := p.Namespace + "/" + p.Name
	spec := fmt.Sprintf("%s/%d", p.UID, p.Generation)
	for attempt := 0; ; attempt++ {
		r.mu.Lock()
		cached := r.clients[key]
		epoch := r.epochs[key]
		r.mu.Unlock()
		if cached != nil && cached.spec == spec && cached.epoch == epoch && r.now().Sub(cached.checked) < r.ttl() {
			return cached, cached.err
		}

		v, _, _ := r.flight.Do(key, func() (any, error) {
			return r.refresh(ctx, key, spec, p, cached), nil
		})
		c := v.(*client)
		if attempt > 0 || c.epoch == r.epoch(key) {
			return c, c.err
		}
		// Invalidated while the Secret was read, for example by the event of the Secret being
		// created: read once more, or the stale answer would stay with no event left to replace it.
	}
}

func (r *Resolver) epoch(key string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.epochs[key]
}

// refresh reads p's credentials and rebuilds its provider when they or its spec changed.
func (r *Resolver) refresh(ctx context.Context, key, spec string, p *scmv1alpha1.ScmProvider, cached *client) *client {
	c := &client{spec: spec, checked: r.now(), epoch: r.epoch(key)}
	creds, rerr := r.readCredentials(ctx, p)
	switch {
	case rerr != nil && rerr.Transient && cached != nil && cached.spec == spec && cached.err == nil:
		// The API server hiccuped: keep using the client built from the last good read.
		return cached
	case rerr != nil:
		c.err = rerr
	case cached != nil && cached.spec == spec && cached.credentials == creds.version && cached.err == nil:
		c.provider, c.credentials = cached.provider, cached.credentials
	default:
		c.credentials = creds.version
		c.provider, c.err = r.build(key, p, creds)
	}
	if c.err == nil || !c.err.Transient {
		r.mu.Lock()
		if r.clients == nil {
			r.clients = map[string]*client{}
		}
		r.clients[key] = c
		r.mu.Unlock()
	}
	return c
}

func (r *Resolver) build(key string, p *scmv1alpha1.ScmProvider, creds credentials) (scm.Provider, *Error) {
	typ := string(p.Spec.Type)
	build := r.New
	if build == nil {
		// Checked first: the keys a Secret needs depend on the type.
		if !registered(typ) {
			return nil, &Error{Reason: ReasonUnsupportedType, Message: fmt.Sprintf(
				"ScmProvider %q has type %q, which this controller does not support; supported types: %s",
				p.Name, typ, strings.Join(scm.Registered(), ", "))}
		}
		build = scm.New
	}
	if _, err := scm.LimitsFor(p.Spec.RateLimit); err != nil {
		return nil, &Error{Reason: ReasonProviderInvalid, Message: fmt.Sprintf("ScmProvider %q: %v", p.Name, err)}
	}
	cfg, err := scm.ConfigFor(p, creds.secret, creds.ca)
	if err != nil {
		return nil, &Error{Reason: ReasonSecretInvalid, Unwatched: true, Message: fmt.Sprintf("ScmProvider %q: %v", p.Name, err)}
	}
	cfg.Limiters = r.Limiters
	cfg.MaxWait = r.MaxWait
	cfg.Transport = r.Transport
	cfg.UserAgent = r.UserAgent
	if r.Metrics != nil {
		cfg.WrapTransport = r.Metrics.WrapTransport(key)
	}
	provider, err := build(typ, cfg)
	if err != nil {
		// Provider constructors name the field to fix (baseURL, CA bundle, credentials) and never
		// echo a credential.
		return nil, &Error{Reason: ReasonProviderInvalid, Message: fmt.Sprintf("ScmProvider %q: %v", p.Name, err)}
	}
	if r.Metrics != nil {
		provider = r.Metrics.Instrument(provider, key)
	}
	return provider, nil
}

func registered(typ string) bool {
	for _, name := range scm.Registered() {
		if name == typ {
			return true
		}
	}
	return false
}

// Invalidate makes the next Resolve or CheckProvider for the ScmProvider read its Secret again,
// and a read under way count as stale. The client is rebuilt only if the Secret changed.
func (r *Resolver) Invalidate(providerKey string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.epochs == nil {
		r.epochs = map[string]uint64{}
	}
	r.epochs[providerKey]++
}

// Forget drops everything kept for a deleted ScmProvider: its client, its rate limiter and its
// metric series.
func (r *Resolver) Forget(providerKey string) {
	r.mu.Lock()
	delete(r.clients, providerKey)
	delete(r.epochs, providerKey)
	r.mu.Unlock()
	limiters := r.Limiters
	if limiters == nil {
		limiters = ratelimit.Default
	}
	limiters.Forget(providerKey)
	if r.Metrics != nil {
		r.Metrics.Forget(providerKey)
	}
}

// ResolveRepository returns the Target of the ScmRepository namespace/name: the same provider
// client, credentials cache and shared rate limiter that CommitStatuses of that repository use.
func (r *Resolver) ResolveRepository(ctx context.Context, namespace, name string) (*Target, *Error) {
	return r.Resolve(ctx, &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace},
		Spec:       commitstatusv1alpha1.CommitStatusSpec{RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: name}},
	})
}

// Provider returns the provider client of p, built from its Secret at most once per
// CredentialsTTL: the same client, and so the same webhook secret and rate limiter, that its
// CommitStatuses use.
func (r *Resolver) Provider(ctx context.Context, p *scmv1alpha1.ScmProvider) (scm.Provider, *Error) {
	c, err := r.client(ctx, p)
	if err != nil {
		return nil, err
	}
	return c.provider, nil
}
