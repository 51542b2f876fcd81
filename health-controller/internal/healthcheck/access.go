package healthcheck

// A HealthCheck reads only what a ServiceAccount of its namespace may read. The watches keep
// what the controller may read, for every HealthCheck at once; before a target is used, the API
// server is asked, with a SubjectAccessReview, whether the HealthCheck's ServiceAccount may get
// (or, for a selector, list) it. A target it may not read is not read at all: not evaluated, not
// reported found or missing, so the verdict tells nothing of it.

import (
	"context"
	"fmt"
	"strings"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/access"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
)

// Authorizer answers whether a ServiceAccount may do a request: an *access.Reviewer, which
// remembers answers for a short time.
type Authorizer interface {
	Allowed(ctx context.Context, sa access.ServiceAccount, req access.Request) (bool, error)
}

// serviceAccountOf is the ServiceAccount hc reads as; false for the controller's own rights
// (no spec.serviceAccountName and an empty --default-service-account).
func (r *Reconciler) serviceAccountOf(hc *healthv1alpha1.HealthCheck) (access.ServiceAccount, bool) {
	name := hc.Spec.ServiceAccountName
	if name == "" {
		name = r.DefaultServiceAccount
	}
	return access.ServiceAccount{Namespace: hc.Namespace, Name: name}, name != ""
}

// readRequest is a read of one object (name set) or of every object of a scope (a selector).
func readRequest(s dynamicwatch.Scope, name string) access.Request {
	verb := "get"
	if name == "" {
		verb = "list"
	}
	return access.Request{Verb: verb, Group: s.Resource.Group, Resource: s.Resource.Resource, Namespace: s.Namespace, Name: name}
}

func denial(sa access.ServiceAccount, req access.Request, what string) string {
	where := "cluster-wide"
	if req.Namespace != "" {
		where = "in namespace " + req.Namespace
	}
	object := req.Resource
	if req.Name != "" {
		object += " " + req.Name
	}
	return fmt.Sprintf("%s may not %s %s %s (%s)", sa, req.Verb, object, where, what)
}

// deniedTargets checks what the spec names: objects, selectors, Kustomizations, Applications
// and the revision source. It returns the message of a Stalled condition when any is denied.
func (r *Reconciler) deniedTargets(ctx context.Context, p *plan) (string, error) {
	sa, ok := r.serviceAccountOf(p.hc)
	if !ok {
		return "", nil
	}
	var denied []string
	check := func(s dynamicwatch.Scope, name, what string) error {
		req := readRequest(s, name)
		allowed, err := r.Access.Allowed(ctx, sa, req)
		if err == nil && !allowed {
			denied = append(denied, denial(sa, req, what))
		}
		return err
	}
	for _, o := range p.objects {
		if err := check(o.kind.scope, o.name, o.kind.gvk.Kind+" target"); err != nil {
			return "", err
		}
	}
	for _, s := range p.selections {
		if err := check(s.kind.scope, "", s.kind.gvk.Kind+" selector"); err != nil {
			return "", err
		}
	}
	srcs := p.sources
	if p.revision != nil {
		srcs = append(srcs[:len(srcs):len(srcs)], *p.revision)
	}
	for _, src := range srcs {
		if !src.served {
			continue
		}
		if err := check(src.kind.scope, src.name, src.gk.Kind); err != nil {
			return "", err
		}
	}
	if len(denied) == 0 {
		return "", nil
	}
	return strings.Join(denied, "; ") + ": nothing of it is read. Grant that ServiceAccount read access with a Role and " +
		"RoleBinding in the target's namespace, or name another in spec.serviceAccountName", nil
}

// dropDeniedInventory removes from the plan the objects of inventories, from index from on,
// that the ServiceAccount may not get: each is reported Unknown, unread.
func (r *Reconciler) dropDeniedInventory(ctx context.Context, p *plan, from int) error {
	sa, ok := r.serviceAccountOf(p.hc)
	if !ok || from >= len(p.objects) {
		return nil
	}
	kept := p.objects[:from:from]
	for _, o := range p.objects[from:] {
		req := readRequest(o.kind.scope, o.name)
		allowed, err := r.Access.Allowed(ctx, sa, req)
		if err != nil {
			return err
		}
		if allowed {
			kept = append(kept, o)
			continue
		}
		p.results = append(p.results, healthv1alpha1.ResourceHealth{APIVersion: o.kind.gvk.GroupVersion().String(), Kind: o.kind.gvk.Kind,
			Namespace: o.namespace, Name: o.name, Status: healthv1alpha1.StatusUnknown,
			Message: denial(sa, req, "listed in an inventory") + ": not read"})
	}
	p.objects = kept
	return nil
}
