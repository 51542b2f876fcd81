package web

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	writes "github.com/sluicehq/sluice/pkg/actions"
	"github.com/sluicehq/sluice/pkg/fluxsource"
)

// approveAction lets one revision through a closed gate, with the same write as `kubectl
// sluice gate approve`: an entry of spec.approvals naming the person, now, and an expiry if
// given. From a pipeline's card the revision is the dry SHA the environment would promote; from
// a held Flux object's row it is the revision its source has fetched.
var approveAction = &action{
	Title: "Approve a revision", Kind: "Gate", reason: "ApprovedFromUI",
	Fields: []field{
		{Name: "revision", Label: "Revision", Help: "A dry SHA in full, a Flux revision such as main@sha1:<sha>, an OCI digest or a chart version; the gate lets exactly this through while closed."},
		{Name: "for", Label: "For (optional)", Help: "An expiry such as 8h or 72h. Empty: until someone removes the approval."},
		{Name: "message", Label: "Message", Help: "Why, such as the change ticket; shown on the gate."},
		{Name: "strategy", Hidden: true}, {Name: "env", Hidden: true}, {Name: "target", Hidden: true},
	},
	back:       approvalBack,
	permission: needs("update", schema.GroupResource{Group: gatingv1alpha1.GroupName, Resource: "gates"}),
	describe: func(s *Server, ns, name string, f url.Values, now time.Time) (string, error) {
		d, err := parseFor(f.Get("for"))
		if err != nil {
			return "", err
		}
		if s.Store.Gate(ns, name) == nil {
			return "", fmt.Errorf("gate %s/%s does not exist", ns, name)
		}
		rev := f.Get("revision")
		if rev == "" {
			return "", fmt.Errorf("say which revision to approve")
		}
		what := fmt.Sprintf("Gate %s/%s: spec.approvals gains %s, approved by you now", ns, name, rev)
		if d > 0 {
			what += ", until " + now.Add(d).UTC().Truncate(time.Second).Format(time.RFC3339)
		} else {
			what += ", until someone removes it"
		}
		return what + "; while the gate is closed it lets exactly this revision through, and nothing else", nil
	},
	apply: func(ctx context.Context, c clients, ns, name string, f url.Values, now time.Time) (runtime.Object, error) {
		d, _ := parseFor(f.Get("for"))
		at := metav1.NewTime(now.UTC().Truncate(time.Second))
		a := gatingv1alpha1.GateApproval{Revision: f.Get("revision"), By: c.User, At: &at, Message: f.Get("message")}
		if d > 0 {
			until := metav1.NewTime(now.Add(d).UTC().Truncate(time.Second))
			a.Until = &until
		}
		return writes.Approve(ctx, c.Sluice.GatingV1alpha1().Gates(ns), name, a, now, fieldManager)
	},
	prefill: targetRevision,
}

// removeApprovalAction removes one approval from a gate, with pkg/actions.RemoveApproval.
var removeApprovalAction = &action{
	Title: "Remove an approval", Kind: "Gate", reason: "ApprovalRemovedFromUI",
	Fields:     []field{{Name: "revision", Hidden: true}},
	back:       func(_ *Server, ns, name string, _ url.Values) string { return pathOf("gates", ns, name) },
	permission: needs("update", schema.GroupResource{Group: gatingv1alpha1.GroupName, Resource: "gates"}),
	describe: func(s *Server, ns, name string, f url.Values, _ time.Time) (string, error) {
		g := s.Store.Gate(ns, name)
		if g == nil {
			return "", fmt.Errorf("gate %s/%s does not exist", ns, name)
		}
		for _, a := range g.Spec.Approvals {
			if a.Revision == f.Get("revision") {
				return fmt.Sprintf("Gate %s/%s: the approval of %s is removed from spec.approvals; while the gate is closed it holds that revision again", ns, name, a.Revision), nil
			}
		}
		return "", fmt.Errorf("gate %s/%s does not approve %q", ns, name, f.Get("revision"))
	},
	apply: func(ctx context.Context, c clients, ns, name string, f url.Values, _ time.Time) (runtime.Object, error) {
		g, removed, err := writes.RemoveApproval(ctx, c.Sluice.GatingV1alpha1().Gates(ns), name, f.Get("revision"), fieldManager)
		if err == nil && !removed {
			err = fmt.Errorf("gate %s/%s no longer approves %q: someone removed it meanwhile", ns, name, f.Get("revision"))
		}
		return g, err
	},
}

// approvalBack is the pipeline the approval came from, when it exists, else the gate's page.
func approvalBack(s *Server, ns, name string, f url.Values) string {
	if sns, sname, ok := strings.Cut(f.Get("strategy"), "/"); ok && s.Store.PromotionStrategy(sns, sname) != nil {
		return pathOf("pipelines", sns, sname)
	}
	return pathOf("gates", ns, name)
}

// targetRevision fills in the revision a held Kustomization or HelmRelease would apply, read as
// the person: its Flux source's status.artifact.revision, which is what the gate-controller
// matches approvals to. Any other kind has no such revision, and the form stays empty.
func targetRevision(ctx context.Context, c clients, _, _ string, f url.Values) url.Values {
	kind, rest, _ := strings.Cut(f.Get("target"), "/")
	tns, tname, ok := strings.Cut(rest, "/")
	resource, approvable := approvableTargets[kind]
	if !approvable || !ok || f.Get("revision") != "" {
		return f
	}
	obj, err := c.Dynamic.Resource(resource).Namespace(tns).Get(ctx, tname, metav1.GetOptions{})
	if err != nil {
		return f
	}
	src, err := fluxsource.Of(resource.GroupResource(), obj)
	if err != nil {
		return f
	}
	u, err := c.Dynamic.Resource(sourceResource(src)).Namespace(src.Namespace).Get(ctx, src.Name, metav1.GetOptions{})
	if err != nil {
		return f
	}
	if rev, err := fluxsource.ArtifactRevision(u); err == nil {
		f = cloneValues(f)
		f.Set("revision", rev)
	}
	return f
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
