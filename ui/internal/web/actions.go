package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sluicehq/sluice/pkg/access"
)

// action is one thing a person can do from the UI.
type action struct {
	Title  string
	Kind   string
	Fields []field
	// describe says exactly what apply will change, or why it cannot.
	describe func(s *Server, ns, name string, f url.Values, now time.Time) (string, error)
	// apply makes the change with the person's clients and returns the object changed or
	// created, for the Event.
	apply func(ctx context.Context, c clients, ns, name string, f url.Values, now time.Time) (runtime.Object, error)
	// back is the page to return to: a path built with pathOf from objects that exist.
	back   func(s *Server, ns, name string, f url.Values) string
	reason string
	// permission is what RBAC must allow the person for apply's write, asked before the action is
	// offered or taken; false when it depends on a field not chosen yet.
	permission func(ns, name string, f url.Values) (access.Request, bool)
	// prefill, when set, completes the form's values with what it reads as the person, before
	// the form is shown (the revision a held object would apply, say).
	prefill func(ctx context.Context, c clients, ns, name string, f url.Values) url.Values
}

// field is one input of an action's form.
type field struct {
	Name, Label, Help string
	// Options, when set, make the field a choice among them.
	Options func(s *Server, ns, name string, f url.Values) []option
	Hidden  bool
}

type option struct{ Value, Label string }

type actionData struct {
	Action            *action
	Name              string
	Namespace, Object string
	Values            url.Values
	Fields            []formField
	Description       string
	Error             string
	Back              string
}

type formField struct {
	field
	Value   string
	Select  bool
	Choices []option
}

func (s *Server) lookupAction(w http.ResponseWriter, r *http.Request) (*action, string, string, bool) {
	a := actions[r.PathValue("action")]
	if a == nil {
		http.NotFound(w, r)
		return nil, "", "", false
	}
	return a, r.PathValue("namespace"), r.PathValue("name"), true
}

func (s *Server) formData(a *action, name, ns, obj string, values url.Values) actionData {
	d := actionData{Action: a, Name: name, Namespace: ns, Object: obj, Values: values, Back: a.back(s, ns, obj, values)}
	for _, f := range a.Fields {
		ff := formField{field: f, Value: values.Get(f.Name)}
		if f.Options != nil {
			ff.Select, ff.Choices = true, f.Options(s, ns, obj, values)
		}
		d.Fields = append(d.Fields, ff)
	}
	return d
}

// actionForm shows an action's inputs.
func (s *Server) actionForm(w http.ResponseWriter, r *http.Request) {
	a, ns, obj, ok := s.lookupAction(w, r)
	if !ok {
		return
	}
	values := r.URL.Query()
	if id, known := s.Identify.Identify(r); known && s.Act != nil && a.prefill != nil {
		if c, err := s.Act.clientsFor(id); err == nil {
			values = a.prefill(r.Context(), c, ns, obj, values)
		}
	}
	data := s.formData(a, r.PathValue("action"), ns, obj, values)
	if s.refuseUnallowed(w, r, data) {
		return
	}
	s.render(w, r, http.StatusOK, "action", page{Title: a.Title, Data: data})
}

// action reviews (step=review: the confirmation, saying exactly what changes) or applies
// (step=apply) an action. Only a person the Identifier names may act, only with a valid CSRF
// token, and only as themselves.
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	a, ns, obj, ok := s.lookupAction(w, r)
	if !ok {
		return
	}
	if !s.csrf.check(r) {
		http.Error(w, "this form is stale or came from another site; reload the page and try again", http.StatusForbidden)
		return
	}
	id, known := s.Identify.Identify(r)
	if !known || s.Act == nil {
		http.Error(w, "this UI is read-only for you: actions need a signed-in user (see docs/ui.md)", http.StatusForbidden)
		return
	}
	values := url.Values{}
	for _, f := range a.Fields {
		values.Set(f.Name, strings.TrimSpace(r.PostFormValue(f.Name)))
	}
	data := s.formData(a, r.PathValue("action"), ns, obj, values)
	if s.refuseUnallowed(w, r, data) {
		return
	}
	now := s.Now()
	desc, err := a.describe(s, ns, obj, values, now)
	if err != nil {
		data.Error = err.Error()
		s.render(w, r, http.StatusUnprocessableEntity, "action", page{Title: a.Title, Data: data})
		return
	}
	data.Description = desc
	if r.PostFormValue("step") != "apply" {
		s.render(w, r, http.StatusOK, "confirm", page{Title: "Confirm: " + a.Title, Data: data})
		return
	}
	c, err := s.Act.clientsFor(id)
	if err == nil {
		var changed runtime.Object
		if changed, err = a.apply(r.Context(), c, ns, obj, values, now); err == nil {
			s.Act.Recorder.Eventf(changed, corev1.EventTypeNormal, a.reason, "%s (by %s, from the Sluice UI)", desc, id.User)
			s.Log.Info("action", "action", data.Name, "namespace", ns, "name", obj, "user", id.User)
			http.Redirect(w, r, withDone(a.back(s, ns, obj, values), s.flashes.put(desc, now)), http.StatusSeeOther)
			return
		}
	}
	s.Log.Info("action refused", "action", data.Name, "namespace", ns, "name", obj, "user", id.User, "error", err)
	data.Error = err.Error()
	s.render(w, r, statusOf(err), "confirm", page{Title: "Not done: " + a.Title, Data: data})
}

// parseFor reads an optional duration such as 2h or 30m.
func parseFor(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a duration such as 30m, 2h or 72h", v)
	}
	return d, nil
}
