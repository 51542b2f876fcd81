package web

import (
	"fmt"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/sluicehq/sluice/pkg/access"
)

// NewActor returns the Actor that acts with cfg: as the person, impersonated (proxy and OIDC
// modes), or as cfg's own user (local mode). Whether a person may take an action is asked with a
// SelfSubjectAccessReview made the same way, so an action is offered only to whom its request
// would be allowed, the limits of the UI's own impersonation rights included.
func NewActor(cfg *rest.Config, recorder record.EventRecorder, impersonate bool) *Actor {
	a := &Actor{Config: cfg, Recorder: recorder}
	a.May = &access.Reviewer{AsPerson: func(p access.Person) (authorizationclient.SelfSubjectAccessReviewInterface, error) {
		c := rest.CopyConfig(cfg)
		if impersonate {
			c.Impersonate = rest.ImpersonationConfig{UserName: p.User, Groups: p.Groups, Extra: p.Extra}
		}
		client, err := authorizationclient.NewForConfig(c)
		if err != nil {
			return nil, err
		}
		return client.SelfSubjectAccessReviews(), nil
	}}
	return a
}

// mayAct asks whether the request's person may take the action name on ns/obj with the form's
// values f: allowed, and the request asked (nil when there is nothing to ask: an action whose
// request depends on a field not chosen yet; the API server decides). Nobody named, or a UI that
// does not act, may not.
func (s *Server) mayAct(r *http.Request, name, ns, obj string, f url.Values) (bool, *access.Request, error) {
	id, known := s.Identify.Identify(r)
	a := actions[name]
	if !known || s.Act == nil || a == nil {
		return false, nil, nil
	}
	if a.permission == nil {
		return true, nil, nil
	}
	req, ok := a.permission(ns, obj, f)
	if !ok || s.Act.May == nil {
		return true, nil, nil
	}
	allowed, err := s.Act.May.AllowedPerson(r.Context(), id.person(), req)
	if err != nil {
		s.Log.Warn("cannot tell whether a person may act; the action is not offered", "user", id.User, "error", err)
	}
	return allowed, &req, err
}

// offers is the page's May: whether to show the action's button.
func (s *Server) offers(r *http.Request) func(action, ns, name, kind string) bool {
	return func(action, ns, name, kind string) bool {
		f := url.Values{}
		if kind != "" {
			f.Set("kind", kind)
		}
		ok, _, err := s.mayAct(r, action, ns, name, f)
		return ok && err == nil
	}
}

// refuseUnallowed answers with a 403 page, and reports true, when a review as the person says
// they may not take the action: before the form is filled in, and before anything is sent. When
// the review cannot be made the API server decides at apply.
func (s *Server) refuseUnallowed(w http.ResponseWriter, r *http.Request, data actionData) bool {
	ok, req, err := s.mayAct(r, data.Name, data.Namespace, data.Object, data.Values)
	if ok || req == nil || err != nil {
		return false
	}
	id, _ := s.Identify.Identify(r)
	data.Error = forbidden(id.User, *req).Error() + " (asked with a SelfSubjectAccessReview as you before anything was sent)"
	s.render(w, r, http.StatusForbidden, "confirm", page{Title: "Not allowed: " + data.Action.Title, Data: data})
	return true
}

// forbidden is the API server's own refusal of req for user.
func forbidden(user string, req access.Request) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: req.Group, Resource: req.Resource}, req.Name,
		fmt.Errorf("User %q cannot %s resource %q in API group %q in the namespace %q", user, req.Verb, req.Resource, req.Group, req.Namespace))
}

// needs is the permission of an action whose write is verb on the object's resource gr: named,
// unless the action creates it (create has no name).
func needs(verb string, gr schema.GroupResource) func(ns, name string, _ url.Values) (access.Request, bool) {
	return func(ns, name string, _ url.Values) (access.Request, bool) {
		if verb == "create" {
			name = ""
		}
		return access.Request{Verb: verb, Group: gr.Group, Resource: gr.Resource, Namespace: ns, Name: name}, true
	}
}

// May reports whether the page offers the action on ns/name (kind: the object's kind, for
// suspend and resume): the person may take it, by a SelfSubjectAccessReview as them.
func (p page) May(action, ns, name string, kind ...string) bool {
	if p.may == nil {
		return false
	}
	k := ""
	if len(kind) > 0 {
		k = kind[0]
	}
	return p.may(action, ns, name, k)
}
