package view

import (
	"cmp"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ActivityRow is one Event about a Sluice object: what happened, to what, and who did it.
type ActivityRow struct {
	Time                  time.Time
	Type, Reason, Message string
	Kind, Namespace, Name string
	// Person is whom a UI action's Event names; Source the component that wrote the Event.
	Person, Source string
	Count          int32
	// Link is the object's page in the UI, or "".
	Link string
}

// ActivityFilter narrows the activity: each field set must match.
type ActivityFilter struct {
	Namespace, Kind, Name, Person, Reason string
}

// Empty reports whether the filter keeps everything.
func (f ActivityFilter) Empty() bool { return f == ActivityFilter{} }

// byPerson finds the person the UI's audit Events name: "... (by alice, from the Sluice UI)".
var byPerson = regexp.MustCompile(`\(by (.+), from the Sluice UI\)$`)

// Activity lays out the Events that pass f, newest first, at most limit of them, and says how
// many passed.
func Activity(events []*corev1.Event, f ActivityFilter, limit int) (rows []ActivityRow, matched int) {
	for _, e := range events {
		r := activityRow(e)
		if !f.keeps(r) {
			continue
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b ActivityRow) int {
		return cmp.Or(b.Time.Compare(a.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Reason, b.Reason))
	})
	matched = len(rows)
	if len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, matched
}

func activityRow(e *corev1.Event) ActivityRow {
	o := e.InvolvedObject
	r := ActivityRow{Time: eventTime(e), Type: e.Type, Reason: e.Reason, Message: e.Message,
		Kind: o.Kind, Namespace: cmp.Or(o.Namespace, e.Namespace), Name: o.Name, Count: e.Count,
		Source: cmp.Or(e.ReportingController, e.Source.Component)}
	if m := byPerson.FindStringSubmatch(e.Message); m != nil {
		r.Person = m[1]
	}
	r.Link = objectPage(r.Kind, r.Namespace, r.Name)
	return r
}

// eventTime is when the Event last happened, by the first time it records.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

func (f ActivityFilter) keeps(r ActivityRow) bool {
	return (f.Namespace == "" || f.Namespace == r.Namespace) &&
		(f.Kind == "" || strings.EqualFold(f.Kind, r.Kind)) &&
		(f.Name == "" || f.Name == r.Name) &&
		(f.Person == "" || strings.Contains(strings.ToLower(r.Person), strings.ToLower(f.Person))) &&
		(f.Reason == "" || strings.Contains(strings.ToLower(r.Reason), strings.ToLower(f.Reason)))
}

// objectPage is the UI's page of an object, or "" for a kind without one.
func objectPage(kind, namespace, name string) string {
	ns, n := url.PathEscape(namespace), url.PathEscape(name)
	q := url.QueryEscape(namespace + "/" + name)
	switch kind {
	case "PromotionStrategy":
		return "/pipelines/" + ns + "/" + n
	case "Gate":
		return "/gates/" + ns + "/" + n
	case "HealthCheck":
		return "/health?q=" + q
	case "RevertCommit", "RollbackPolicy", "ManifestRelease":
		return "/rollbacks?q=" + q
	}
	return ""
}

// ActivityURL is the activity view filtered to one object.
func ActivityURL(kind, namespace, name string) string {
	v := url.Values{"kind": {kind}, "namespace": {namespace}, "name": {name}}
	return "/activity?" + v.Encode()
}
