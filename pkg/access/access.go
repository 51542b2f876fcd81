// Package access answers whether a subject may do something, with access reviews the API server
// decides, remembered for a short time in a bounded cache. A component that serves many people or
// tenants from one informer cache asks it before it uses a cached object for one of them: the
// cache holds what the component may read, and each gets only what they may read.
//
// There are two kinds of subject, and one Reviewer for both: a ServiceAccount (Allowed: the
// health-controller reading a target for a HealthCheck's namespace) and a person (AllowedPerson:
// the UI showing a page, or offering an action, to whoever signed in).
package access

import (
	"context"
	"fmt"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/clock"
)

// Defaults of a Reviewer: RBAC changes reach a subject within DefaultTTL; DefaultMaxEntries
// bounds the memory (an entry is well under 1 KiB), the least recently used answer going first.
const (
	DefaultTTL        = 30 * time.Second
	DefaultMaxEntries = 10_000
)

// Request is a verb on a resource; Namespace is empty for a cluster-scoped resource and Name
// empty for every object of the resource.
type Request struct {
	Verb, Group, Resource, Namespace, Name string
}

// Reviewer asks and remembers. The zero TTL and MaxEntries mean the defaults.
//
// It asks with SubjectAccessReviews through Reviews, naming the subject (the asker needs create
// on subjectaccessreviews). With AsPerson set, it asks as the person instead: a
// SelfSubjectAccessReview through the client AsPerson returns, which impersonates them, so the
// answer is the one their own request would get, the limits of the asker's impersonation rights
// included.
type Reviewer struct {
	Reviews    authorizationclient.SubjectAccessReviewInterface
	AsPerson   func(Person) (authorizationclient.SelfSubjectAccessReviewInterface, error)
	TTL        time.Duration
	MaxEntries int
	Clock      clock.PassiveClock

	once    sync.Once
	answers *lru.Cache[string, answer]
}

type answer struct {
	allowed bool
	expires time.Time
}

// Allowed says whether sa may do req. A rule allowing the verb on every object of the resource
// is asked once per resource and namespace; only when that is denied is the name asked (RBAC
// resourceNames). An error is the API server's, to retry; it is not remembered.
func (r *Reviewer) Allowed(ctx context.Context, sa ServiceAccount, req Request) (bool, error) {
	return r.allowed(ctx, sa.subject(), req)
}

// AllowedPerson says whether the person p may do req, as Allowed does for a ServiceAccount.
func (r *Reviewer) AllowedPerson(ctx context.Context, p Person, req Request) (bool, error) {
	return r.allowed(ctx, p.subject(), req)
}

func (r *Reviewer) allowed(ctx context.Context, s subject, req Request) (bool, error) {
	if req.Name != "" {
		every := req
		every.Name = ""
		if ok, err := r.ask(ctx, s, every); ok || err != nil {
			return ok, err
		}
	}
	return r.ask(ctx, s, req)
}

func (r *Reviewer) ask(ctx context.Context, s subject, req Request) (bool, error) {
	key := s.key + requestKey(req)
	now := r.now()
	if a, ok := r.cache().Get(key); ok && now.Before(a.expires) {
		return a.allowed, nil
	}
	allowed, err := r.review(ctx, s, req)
	if err != nil {
		return false, fmt.Errorf("asking whether %s may %s %s: %w", s.name, req.Verb, req.Resource, err)
	}
	r.cache().Add(key, answer{allowed: allowed, expires: now.Add(r.ttl())})
	return allowed, nil
}

// review asks the API server, uncached.
func (r *Reviewer) review(ctx context.Context, s subject, req Request) (bool, error) {
	attrs := &authorizationv1.ResourceAttributes{Verb: req.Verb, Group: req.Group, Resource: req.Resource,
		Namespace: req.Namespace, Name: req.Name}
	if r.AsPerson != nil && s.person != nil {
		reviews, err := r.AsPerson(*s.person)
		if err != nil {
			return false, err
		}
		review, err := reviews.Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return review.Status.Allowed, nil
	}
	review, err := r.Reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: s.user, Groups: s.groups, Extra: s.extra, ResourceAttributes: attrs,
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return review.Status.Allowed, nil
}

// cache is the bounded memory of answers, made on first use so a zero Reviewer works.
func (r *Reviewer) cache() *lru.Cache[string, answer] {
	r.once.Do(func() {
		size := r.MaxEntries
		if size <= 0 {
			size = DefaultMaxEntries
		}
		r.answers, _ = lru.New[string, answer](size) // errors only for a size <= 0
	})
	return r.answers
}

// Size is the number of answers remembered.
func (r *Reviewer) Size() int { return r.cache().Len() }

func (r *Reviewer) ttl() time.Duration {
	if r.TTL > 0 {
		return r.TTL
	}
	return DefaultTTL
}

func (r *Reviewer) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}
