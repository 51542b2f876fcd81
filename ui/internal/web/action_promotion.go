package web

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	writes "github.com/sluicehq/sluice/pkg/actions"
)

// mergeAction merges a promotion that waits for a person: spec.state merged on its PullRequest,
// which the promoter-controller carries out on the SCM.
var mergeAction = &action{
	Title: "Merge promotion", Kind: "PullRequest", reason: "MergeRequestedFromUI",
	permission: needs("patch", schema.GroupResource{Group: promoterv1alpha1.GroupName, Resource: "pullrequests"}),
	Fields:     []field{{Name: "strategy", Hidden: true}},
	// back is the strategy's page when the strategy exists, else the list: the field comes
	// from the form, so it never makes a path of its own.
	back: func(s *Server, ns, _ string, f url.Values) string {
		if strategy := f.Get("strategy"); strategy != "" && s.Store.PromotionStrategy(ns, strategy) != nil {
			return pathOf("pipelines", ns, strategy)
		}
		return "/pipelines"
	},
	describe: func(s *Server, ns, name string, _ url.Values, _ time.Time) (string, error) {
		pr := s.Store.PullRequest(ns, name)
		if pr == nil {
			return "", fmt.Errorf("pull request %s/%s does not exist", ns, name)
		}
		if pr.Status.State != promoterv1alpha1.PullRequestOpen {
			return "", fmt.Errorf("pull request %s/%s is %s, not open", ns, name, pr.Status.State)
		}
		return fmt.Sprintf("PullRequest %s/%s: spec.state becomes merged, so the promoter-controller merges %s into %s", ns, name, pr.Spec.SourceBranch, pr.Spec.TargetBranch), nil
	},
	apply: func(ctx context.Context, c clients, ns, name string, _ url.Values, _ time.Time) (runtime.Object, error) {
		return c.Sluice.PromoterV1alpha1().PullRequests(ns).Patch(ctx, name, types.MergePatchType,
			[]byte(`{"spec":{"state":"merged"}}`), metav1.PatchOptions{FieldManager: fieldManager})
	},
}

// revertAction reverts an environment to a healthy dry SHA of its own choosing: a RevertCommit,
// which the rollback-controller writes and merges.
var revertAction = &action{
	Title: "Revert environment", Kind: "PromotionStrategy", reason: "RevertRequestedFromUI",
	permission: needs("create", schema.GroupResource{Group: rollbackv1alpha1.GroupName, Resource: "revertcommits"}),
	Fields: []field{
		{Name: "env", Hidden: true},
		{Name: "sha", Label: "Go back to", Options: healthySHAs},
		{Name: "reason", Label: "Reason", Help: "Goes into the revert commit, its pull request and the Events."},
	},
	back: func(_ *Server, ns, name string, _ url.Values) string { return pathOf("pipelines", ns, name) },
	describe: func(s *Server, ns, name string, f url.Values, _ time.Time) (string, error) {
		if !validSHA(s, ns, name, f) {
			return "", fmt.Errorf("choose one of the healthy dry SHAs of %s", f.Get("env"))
		}
		return fmt.Sprintf("A RevertCommit in %s: environment %s of %s goes back to dry commit %s; the rollback-controller writes the revert and its pull request", ns, f.Get("env"), name, f.Get("sha")), nil
	},
	apply: func(ctx context.Context, c clients, ns, name string, f url.Values, _ time.Time) (runtime.Object, error) {
		r := writes.Revert{Strategy: name, Branch: f.Get("env"), SHA: f.Get("sha"), Reason: f.Get("reason")}
		return writes.CreateRevert(ctx, c.Sluice.RollbackV1alpha1().RevertCommits(ns), r, fieldManager)
	},
}

func healthySHAs(s *Server, ns, name string, f url.Values) []option {
	ps := s.Store.PromotionStrategy(ns, name)
	if ps == nil {
		return nil
	}
	targets, _ := writes.RevertTargets(ps, f.Get("env"))
	var out []option
	for _, h := range targets {
		out = append(out, option{h.SHA, h.SHA[:min(7, len(h.SHA))] + " (healthy " + h.Time.UTC().Format("2006-01-02 15:04 UTC") + ")"})
	}
	return out
}

func validSHA(s *Server, ns, name string, f url.Values) bool {
	for _, o := range healthySHAs(s, ns, name, f) {
		if o.Value == f.Get("sha") {
			return true
		}
	}
	return false
}

// releaseRollbackAction rolls a ManifestRelease back to a kept snapshot, with the annotation the
// rollback-controller acts on once.
var releaseRollbackAction = &action{
	Title: "Roll back release", Kind: "ManifestRelease", reason: "RollbackRequestedFromUI",
	permission: needs("patch", schema.GroupResource{Group: rollbackv1alpha1.GroupName, Resource: "manifestreleases"}),
	Fields:     []field{{Name: "number", Label: "Snapshot", Options: snapshots}},
	back:       func(*Server, string, string, url.Values) string { return "/rollbacks" },
	describe: func(s *Server, ns, name string, f url.Values, _ time.Time) (string, error) {
		for _, o := range snapshots(s, ns, name, f) {
			if o.Value == f.Get("number") {
				return fmt.Sprintf("ManifestRelease %s/%s: the annotation %s=%s is set, so the rollback-controller applies snapshot %s (%s)", ns, name, rollbackv1alpha1.RollbackToAnnotation, o.Value, o.Value, o.Label), nil
			}
		}
		return "", fmt.Errorf("choose one of the kept snapshots of %s/%s", ns, name)
	},
	apply: func(ctx context.Context, c clients, ns, name string, f url.Values, _ time.Time) (runtime.Object, error) {
		n, err := strconv.ParseInt(f.Get("number"), 10, 64)
		if err != nil {
			return nil, err
		}
		return writes.RollBack(ctx, c.Sluice.RollbackV1alpha1().ManifestReleases(ns), name, n, fieldManager)
	},
}

func snapshots(s *Server, ns, name string, _ url.Values) []option {
	mr := s.Store.ManifestRelease(ns, name)
	if mr == nil {
		return nil
	}
	return releaseSnapshots(mr)
}

// actions are every action, by the name in its URL.
var actions = map[string]*action{
	"close-gate":      gateAction(false),
	"open-gate":       gateAction(true),
	"suspend":         suspendAction(false),
	"resume":          suspendAction(true),
	"merge":           mergeAction,
	"revert":          revertAction,
	"rollback":        releaseRollbackAction,
	"approve":         approveAction,
	"remove-approval": removeApprovalAction,
}
