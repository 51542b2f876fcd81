package web

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sluicehq/sluice/pkg/access"
	writes "github.com/sluicehq/sluice/pkg/actions"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// suspendable are the kinds suspend and resume apply to, by the name the UI gives them.
var suspendable = map[string]struct {
	resource schema.GroupVersionResource
	page     string
}{
	"PromotionStrategy": {schema.GroupVersionResource{Group: "promoter.sluice.dev", Version: "v1alpha1", Resource: "promotionstrategies"}, "/pipelines/"},
	"Gate":              {schema.GroupVersionResource{Group: "gating.sluice.dev", Version: "v1alpha1", Resource: "gates"}, "/gates/"},
	"HealthCheck":       {schema.GroupVersionResource{Group: "health.sluice.dev", Version: "v1alpha1", Resource: "healthchecks"}, "/health?q="},
	"RollbackPolicy":    {schema.GroupVersionResource{Group: "rollback.sluice.dev", Version: "v1alpha1", Resource: "rollbackpolicies"}, "/rollbacks?q="},
	"ManifestRelease":   {schema.GroupVersionResource{Group: "rollback.sluice.dev", Version: "v1alpha1", Resource: "manifestreleases"}, "/rollbacks?q="},
}

// kindOptions offers the kind the form came from (?kind=) when an object of that kind has the
// name; else every kind of which an object has it. Five kinds for one name would let a person
// suspend a namesake they never looked at.
func kindOptions(s *Server, ns, name string, f url.Values) []option {
	if k := f.Get("kind"); s.suspendTarget(k, ns, name) != nil {
		return []option{{k, k}}
	}
	var out []option
	for _, k := range suspendKinds {
		if s.suspendTarget(k, ns, name) != nil {
			out = append(out, option{k, k})
		}
	}
	return out
}

// suspendAction suspends or resumes an object with RFC-0006's annotation, whose value is the
// reason, with the same write as `kubectl sluice gate suspend|resume`; metadata only, which never
// bumps generation (the Sluice kinds honour the annotation, so spec.suspend is not set).
func suspendAction(resume bool) *action {
	verb, reason := "Suspend", "SuspendedFromUI"
	if resume {
		verb, reason = "Resume", "ResumedFromUI"
	}
	fields := []field{{Name: "kind", Label: "Kind", Options: kindOptions}}
	if !resume {
		fields = append(fields, field{Name: "reason", Label: "Reason", Help: "Why; it stays on the object as the value of " + suspend.Annotation + "."})
	}
	return &action{
		Title: verb, Kind: "object", reason: reason, Fields: fields,
		// Suspend applies the annotation and Resume patches it away: patch on the kind chosen.
		permission: func(ns, name string, f url.Values) (access.Request, bool) {
			k, ok := suspendable[f.Get("kind")]
			if !ok {
				return access.Request{}, false
			}
			return needs("patch", k.resource.GroupResource())(ns, name, f)
		},
		back: func(_ *Server, ns, name string, f url.Values) string {
			k, ok := suspendable[f.Get("kind")]
			if !ok {
				return "/"
			}
			if k.page == "/pipelines/" || k.page == "/gates/" {
				return pathOf(strings.Trim(k.page, "/"), ns, name)
			}
			return k.page[:len(k.page)-3]
		},
		describe: func(s *Server, ns, name string, f url.Values, _ time.Time) (string, error) {
			obj := s.suspendTarget(f.Get("kind"), ns, name)
			if obj == nil {
				return "", fmt.Errorf("choose the kind of %s/%s: no object of the kind chosen has that name", ns, name)
			}
			if resume {
				if !suspendState(obj).Suspended {
					return "", fmt.Errorf("%s %s/%s is not suspended", f.Get("kind"), ns, name)
				}
				return fmt.Sprintf("%s %s/%s: the annotation %s is removed, and spec.suspend where it is true, so its controller resumes it", f.Get("kind"), ns, name, suspend.Annotation), nil
			}
			if f.Get("reason") == "" {
				return "", fmt.Errorf("say why: the reason is what others see on the object")
			}
			return fmt.Sprintf("%s %s/%s: the annotation %s=%q is set, so its controller stops acting on it", f.Get("kind"), ns, name, suspend.Annotation, f.Get("reason")), nil
		},
		apply: func(ctx context.Context, c clients, ns, name string, f url.Values, _ time.Time) (runtime.Object, error) {
			k := suspendable[f.Get("kind")]
			objects := c.Dynamic.Resource(k.resource).Namespace(ns)
			var obj *unstructured.Unstructured
			var err error
			if resume {
				obj, _, err = writes.Resume(ctx, objects, name, fieldManager)
			} else {
				obj, _, err = writes.Suspend(ctx, objects, k.resource.GroupVersion().WithKind(f.Get("kind")), name, f.Get("reason"), false, fieldManager)
			}
			if err != nil {
				return nil, err
			}
			return obj, nil
		},
	}
}
