package web

import (
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/ui/internal/view"
)

// activityLimit bounds the rows of the activity view: the filters find any older one.
const activityLimit = 200

type activityData struct {
	Filter  view.ActivityFilter
	Rows    []view.ActivityRow
	Matched int
	// Watching is false when the UI does not read Events (an embedding without WatchEvents).
	Watching bool
}

// activity is who did what: the Events about Sluice's kinds, the controllers' and the UI's own
// audit Events that name the person, newest first, filtered by namespace, kind, object, person
// and reason. It updates live.
func (s *Server) activity(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := view.ActivityFilter{Namespace: strings.TrimSpace(q.Get("namespace")), Kind: strings.TrimSpace(q.Get("kind")),
		Name: strings.TrimSpace(q.Get("name")), Person: strings.TrimSpace(q.Get("person")), Reason: strings.TrimSpace(q.Get("reason"))}
	data := activityData{Filter: f, Watching: s.Store.Activity != nil}
	data.Rows, data.Matched = view.Activity(s.Store.EventList(), f, activityLimit)
	s.render(w, r, http.StatusOK, "activity", page{Title: "Activity", Nav: "activity", Watch: "Event", Data: data})
}
