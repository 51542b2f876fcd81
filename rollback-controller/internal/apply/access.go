package apply

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/sluicehq/sluice/pkg/manifest"
)

// Need is one right a plan needs: a verb on an object.
type Need struct {
	Verb   string
	Object manifest.Ref
}

// Needs is verbs on each of refs.
func Needs(refs []manifest.Ref, verbs ...string) []Need {
	out := make([]Need, 0, len(refs)*len(verbs))
	for _, r := range refs {
		for _, v := range verbs {
			out = append(out, Need{Verb: v, Object: r})
		}
	}
	return out
}

// DeniedError is a right the acting user does not have. Nothing was written.
type DeniedError struct {
	User     string
	Verb     string
	Object   manifest.Ref
	Resource schema.GroupResource
	Reason   string
}

func (e *DeniedError) Error() string {
	where := "cluster-wide"
	if e.Object.Namespace != "" {
		where = "in namespace " + e.Object.Namespace
	}
	msg := fmt.Sprintf("%s may not %s %s (%s %s)", e.User, e.Verb, e.Object, e.Resource, where)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Reviewer asks the API server what the user of its client may do, with
// SelfSubjectAccessReviews: an impersonating client asks for the user it impersonates.
type Reviewer struct {
	Reviews authorizationclient.SelfSubjectAccessReviewInterface
	// User names the acting user in a DeniedError.
	User string
}

// Check returns a *DeniedError for the first need the user lacks, before anything is written.
// A need on a kind the API server does not know yet (its CRD is part of the plan) is checked
// against the resource its CRD in crds names; a kind known nowhere is left to the apply, which
// fails on it. A rule allowing a verb on every object of a resource is asked once per resource
// and namespace; only when that is denied is each name asked (RBAC resourceNames).
func (a *Applier) Check(ctx context.Context, rv Reviewer, needs []Need, crds []manifest.CRDNames) error {
	answers := map[authorizationv1.ResourceAttributes]*authorizationv1.SubjectAccessReviewStatus{}
	ask := func(attrs authorizationv1.ResourceAttributes) (*authorizationv1.SubjectAccessReviewStatus, error) {
		if st, ok := answers[attrs]; ok {
			return st, nil
		}
		review, err := rv.Reviews.Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("ask whether %s may %s %s: %w", rv.User, attrs.Verb, attrs.Resource, err)
		}
		answers[attrs] = &review.Status
		return &review.Status, nil
	}
	for _, n := range needs {
		gr, namespaced, known, err := a.resourceOf(n.Object, crds)
		if err != nil {
			return err
		}
		if !known {
			continue
		}
		attrs := authorizationv1.ResourceAttributes{Verb: n.Verb, Group: gr.Group, Resource: gr.Resource}
		if namespaced {
			attrs.Namespace = n.Object.Namespace
		}
		st, err := ask(attrs)
		if err != nil {
			return err
		}
		if st.Allowed {
			continue
		}
		attrs.Name = n.Object.Name
		if st, err = ask(attrs); err != nil {
			return err
		}
		if !st.Allowed {
			return &DeniedError{User: rv.User, Verb: n.Verb, Object: n.Object, Resource: gr, Reason: strings.TrimSpace(st.Reason)}
		}
	}
	return nil
}

// resourceOf maps ref's kind to its resource and scope, from the API server's discovery or from
// a CRD of the plan. known is false for a kind found in neither.
func (a *Applier) resourceOf(ref manifest.Ref, crds []manifest.CRDNames) (schema.GroupResource, bool, bool, error) {
	mapping, err := a.Mapper.RESTMapping(ref.GroupKind(), ref.Version)
	if meta.IsNoMatchError(err) {
		a.Mapper.Reset()
		mapping, err = a.Mapper.RESTMapping(ref.GroupKind(), ref.Version)
	}
	if err == nil {
		return mapping.Resource.GroupResource(), mapping.Scope.Name() == meta.RESTScopeNameNamespace, true, nil
	}
	if !meta.IsNoMatchError(err) {
		return schema.GroupResource{}, false, false, err
	}
	for _, c := range crds {
		if c.Group == ref.Group && c.Kind == ref.Kind {
			return schema.GroupResource{Group: c.Group, Resource: c.Plural}, c.Namespaced, true, nil
		}
	}
	return schema.GroupResource{}, false, false, nil
}
