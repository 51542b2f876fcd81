// Package access answers whether a ServiceAccount may read an object, with SubjectAccessReviews
// the API server decides, remembered for a short time. A controller that serves tenants from one
// informer cache asks it before it uses a cached object for a tenant: the cache holds what the
// controller may read, and a tenant gets only what its ServiceAccount may read.
package access

import (
	"context"
	"fmt"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/clock"
)

// Defaults of a Reviewer: RBAC changes reach a tenant within DefaultTTL; MaxEntries bounds the
// memory (an entry is well under 1 KiB).
const (
	DefaultTTL        = 30 * time.Second
	DefaultMaxEntries = 10_000
)

// ServiceAccount names a ServiceAccount.
type ServiceAccount struct{ Namespace, Name string }

func (sa ServiceAccount) String() string { return "ServiceAccount " + sa.Namespace + "/" + sa.Name }

// user is the name the API server gives the ServiceAccount's tokens, and groups the groups it
// adds: a SubjectAccessReview must name both, or bindings to the groups would be missed.
func (sa ServiceAccount) user() (string, []string) {
	return fmt.Sprintf("system:serviceaccount:%s:%s", sa.Namespace, sa.Name),
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"}
}

// Request is a verb on a resource; Namespace is empty for a cluster-scoped resource and Name
// empty for every object of the resource.
type Request struct {
	Verb, Group, Resource, Namespace, Name string
}

// Reviewer asks and remembers. The zero TTL and MaxEntries mean the defaults.
type Reviewer struct {
	Reviews    authorizationclient.SubjectAccessReviewInterface
	TTL        time.Duration
	MaxEntries int
	Clock      clock.PassiveClock

	mu      sync.Mutex
	answers map[answerKey]answer
}

type answerKey struct {
	sa  ServiceAccount
	req Request
}

type answer struct {
	allowed bool
	expires time.Time
}

// Allowed says whether sa may do req. A rule allowing the verb on every object of the resource
// is asked once per resource and namespace; only when that is denied is the name asked (RBAC
// resourceNames). An error is the API server's, to retry; it is not remembered.
func (r *Reviewer) Allowed(ctx context.Context, sa ServiceAccount, req Request) (bool, error) {
	if req.Name != "" {
		every := req
		every.Name = ""
		if ok, err := r.ask(ctx, sa, every); ok || err != nil {
			return ok, err
		}
	}
	return r.ask(ctx, sa, req)
}

func (r *Reviewer) ask(ctx context.Context, sa ServiceAccount, req Request) (bool, error) {
	key := answerKey{sa: sa, req: req}
	now := r.now()
	r.mu.Lock()
	a, ok := r.answers[key]
	r.mu.Unlock()
	if ok && now.Before(a.expires) {
		return a.allowed, nil
	}
	user, groups := sa.user()
	review, err := r.Reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: req.Verb, Group: req.Group, Resource: req.Resource,
			Namespace: req.Namespace, Name: req.Name},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("asking whether %s may %s %s: %w", sa, req.Verb, req.Resource, err)
	}
	r.remember(key, answer{allowed: review.Status.Allowed, expires: now.Add(r.ttl())})
	return review.Status.Allowed, nil
}

// remember keeps an answer; when full, the expired answers go, and if none had expired, all do:
// asking again costs one review each, keeping more would cost memory without bound.
func (r *Reviewer) remember(key answerKey, a answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	max := r.MaxEntries
	if max <= 0 {
		max = DefaultMaxEntries
	}
	if r.answers == nil {
		r.answers = map[answerKey]answer{}
	}
	if len(r.answers) >= max {
		now := r.now()
		for k, old := range r.answers {
			if !now.Before(old.expires) {
				delete(r.answers, k)
			}
		}
		if len(r.answers) >= max {
			clear(r.answers)
		}
	}
	r.answers[key] = a
}

// Size is the number of answers remembered.
func (r *Reviewer) Size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.answers)
}

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
