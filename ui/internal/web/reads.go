package web

import (
	"context"
	"log/slog"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluicehq/sluice/pkg/access"
	"github.com/sluicehq/sluice/ui/internal/store"
)

// forRequest is the Server as the request's person sees it: its Store holds only what they may
// read. Without Reads (local mode) that is the whole store; else a named person reads what
// access reviews for them allow, an anonymous reader (--anonymous=read) what system:anonymous
// may read.
func (s *Server) forRequest(r *http.Request) *Server {
	scoped := *s
	scoped.Store = s.all.For(s.scopeOf(r))
	return &scoped
}

func (s *Server) scopeOf(r *http.Request) store.Scope {
	if s.Reads == nil {
		return store.Everything
	}
	person := access.Anonymous
	if id, known := s.Identify.Identify(r); known {
		person = id.person()
	}
	return reviewedScope{ctx: r.Context(), reviewer: s.Reads, person: person, log: s.Log}
}

// person is the identity as the API server knows it when the UI impersonates it.
func (id Identity) person() access.Person {
	return access.Person{User: id.User, Groups: id.Groups}
}

// reviewedScope is what a person may read, by access reviews remembered in the Reviewer. An
// error (the API server unreachable) hides the objects: nothing is shown that was not allowed.
type reviewedScope struct {
	ctx      context.Context
	reviewer *access.Reviewer
	person   access.Person
	log      *slog.Logger
}

// MayList asks first whether the person may list the kind in every namespace (a
// ClusterRoleBinding): one review then answers for all of them.
func (v reviewedScope) MayList(gr schema.GroupResource, namespace string) bool {
	every := access.Request{Verb: "list", Group: gr.Group, Resource: gr.Resource}
	if ok, err := v.reviewer.AllowedPerson(v.ctx, v.person, every); ok && err == nil {
		return true
	}
	every.Namespace = namespace
	return v.allowed(every)
}

func (v reviewedScope) MayGet(gr schema.GroupResource, namespace, name string) bool {
	return v.allowed(access.Request{Verb: "get", Group: gr.Group, Resource: gr.Resource, Namespace: namespace, Name: name})
}

func (v reviewedScope) allowed(req access.Request) bool {
	ok, err := v.reviewer.AllowedPerson(v.ctx, v.person, req)
	if err != nil {
		v.log.Warn("cannot tell what a person may read; hiding it", "user", v.person.User, "error", err)
	}
	return ok
}
