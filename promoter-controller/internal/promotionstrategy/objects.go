package promotionstrategy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/promotion"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
	"github.com/sluicehq/sluice/pkg/text"
)

// pullRequestPlan is what happens to an environment's PullRequest.
type pullRequestPlan struct {
	// Replace is the uid of a finished PullRequest to delete before Create.
	Replace types.UID
	Create  *promoterv1alpha1.PullRequest
	Update  *promoterv1alpha1.PullRequest
	// Started is announced once Create or Update succeeded.
	Started *event
	// Enqueue asks the PullRequest reconciler to look at an open PullRequest after a fetch: the
	// branches moved, and someone may have merged it outside Sluice.
	Enqueue string
}

// decidePullRequest makes the environment's PullRequest match the verdict, and says where the
// environment's promotion stands. The PullRequest carries the strategy's labels, so a promoter
// sharded by --watch-label-selector watches the PullRequests of its own strategies.
func decidePullRequest(ps *promoterv1alpha1.PromotionStrategy, e environment, v promotion.Verdict, st *promoterv1alpha1.EnvironmentStatus) (pullRequestPlan, envState) {
	plan, state, kept := decidePullRequestState(ps, e, v, st)
	if kept != nil {
		plan.Update = relabeled(kept, plan.Update, ownedLabels(ps, e.Spec.Branch))
	}
	return plan, state
}

// decidePullRequestState decides the PullRequest's spec; kept is the PullRequest read, unless
// it is replaced.
func decidePullRequestState(ps *promoterv1alpha1.PromotionStrategy, e environment, v promotion.Verdict, st *promoterv1alpha1.EnvironmentStatus) (plan pullRequestPlan, state envState, kept *promoterv1alpha1.PullRequest) {
	pr, proposed := e.PullRequest, e.Proposed.HydratedSHA
	done := pr != nil && finished(pr)
	if pr != nil && !done {
		plan.Enqueue = ps.Namespace + "/" + pr.Name
	}
	if done && v.Proposed && pr.Spec.ExpectedHeadSHA != proposed && pr.Status.MergedHeadSHA != proposed {
		// A new proposal after a finished pull request: replace it.
		plan.Replace, pr, done = pr.UID, nil, false
	}
	st.PullRequest = nil
	switch {
	case !v.Proposed:
		if pr != nil && !done && proposed == "" && pr.Spec.State != promoterv1alpha1.PullRequestClosed {
			// The proposed branch is gone: nothing is left to merge.
			plan.Update = pr.DeepCopy()
			plan.Update.Spec.State = promoterv1alpha1.PullRequestClosed
		}
		if pr != nil {
			st.PullRequest = pullRequestRef(pr)
		}
		return plan, statePromoted, pr
	case done:
		st.PullRequest = pullRequestRef(pr)
		if pr.Status.State == promoterv1alpha1.PullRequestClosed {
			return plan, stateClosed, pr
		}
		// Merged: the environment branch shows it at the next fetch.
		return plan, stateMerging, pr
	}
	desired := desiredSpec(ps, e, v)
	next := pr.DeepCopy()
	if pr == nil {
		next = newPullRequest(ps, e.Spec.Branch, desired)
		plan.Create = next
	} else {
		next.Spec.Title, next.Spec.Description, next.Spec.ExpectedHeadSHA = desired.Title, desired.Description, desired.ExpectedHeadSHA
		// With autoMerge off, the state is a person's to set (merged, closed): leave it.
		if autoMerge(e.Spec) || next.Spec.ExpectedHeadSHA != pr.Spec.ExpectedHeadSHA {
			next.Spec.State = desired.State
		}
		if !equality.Semantic.DeepEqual(next.Spec, pr.Spec) {
			plan.Update = next
		}
	}
	asked := next.Spec.State == promoterv1alpha1.PullRequestMerged
	if asked && autoMerge(e.Spec) && (pr == nil || pr.Spec.State != promoterv1alpha1.PullRequestMerged) {
		plan.Started = &event{Type: corev1.EventTypeNormal, Reason: EventPromotionStarted,
			Message: fmt.Sprintf("%s: merging %s (dry %s)", e.Spec.Branch, text.ShortSHA(proposed), text.ShortSHA(e.Proposed.DrySHA))}
	}
	st.PullRequest = pullRequestRef(next)
	switch {
	case asked:
		return plan, stateMerging, pr
	case v.Eligible:
		return plan, stateWaiting, pr
	}
	return plan, stateBlocked, pr
}

// relabeled is update, or a copy of pr when there is no update, with labels added where pr
// lacks them; nil when nothing needs writing.
func relabeled(pr, update *promoterv1alpha1.PullRequest, labels map[string]string) *promoterv1alpha1.PullRequest {
	base := update
	if base == nil {
		base = pr
	}
	if reconcile.HasLabels(base.Labels, labels) {
		return update
	}
	next := base.DeepCopy()
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	for k, v := range labels {
		next.Labels[k] = v
	}
	return next
}

func finished(pr *promoterv1alpha1.PullRequest) bool {
	return pr.Status.State == promoterv1alpha1.PullRequestMerged || pr.Status.State == promoterv1alpha1.PullRequestClosed
}

func autoMerge(e promoterv1alpha1.Environment) bool { return e.AutoMerge == nil || *e.AutoMerge }

func desiredSpec(ps *promoterv1alpha1.PromotionStrategy, e environment, v promotion.Verdict) promoterv1alpha1.PullRequestSpec {
	spec := promoterv1alpha1.PullRequestSpec{
		RepositoryRef: ps.Spec.RepositoryRef,
		Title:         pullRequestTitle(e),
		Description:   pullRequestDescription(ps, e),
		SourceBranch:  e.Spec.Branch + proposedSuffix(ps.Spec),
		TargetBranch:  e.Spec.Branch,
		// The head is pinned even while the pull request waits: a merge by hand on an SCM
		// is the person's call, but Sluice never merges anything but the commit it checked.
		ExpectedHeadSHA: e.Proposed.HydratedSHA,
		State:           promoterv1alpha1.PullRequestOpen,
	}
	if v.Eligible && autoMerge(e.Spec) {
		spec.State = promoterv1alpha1.PullRequestMerged
	}
	return spec
}

func newPullRequest(ps *promoterv1alpha1.PromotionStrategy, branch string, spec promoterv1alpha1.PullRequestSpec) *promoterv1alpha1.PullRequest {
	return &promoterv1alpha1.PullRequest{ObjectMeta: ownedMeta(ps, branch), Spec: spec}
}

// ownedMeta is the metadata of an object the strategy owns for one environment.
func ownedMeta(ps *promoterv1alpha1.PromotionStrategy, branch string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: objectName(ps.Name, branch), Namespace: ps.Namespace,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ps, promoterv1alpha1.SchemeGroupVersion.WithKind("PromotionStrategy"))},
		Labels:          ownedLabels(ps, branch),
	}
}

// ownedLabels are the strategy's own labels, so the selector of a sharded promoter that matches
// the strategy matches what it owns, plus the strategy, environment and stage.
func ownedLabels(ps *promoterv1alpha1.PromotionStrategy, branch string) map[string]string {
	out := make(map[string]string, len(ps.Labels)+3)
	for k, v := range ps.Labels {
		out[k] = v
	}
	out[promoterv1alpha1.StrategyLabel] = ps.Name
	out[promoterv1alpha1.EnvironmentLabel] = labelValue(branch)
	if i := slices.IndexFunc(ps.Spec.Environments, func(e promoterv1alpha1.Environment) bool { return e.Branch == branch }); i >= 0 {
		out[promoterv1alpha1.StageLabel] = strconv.Itoa(i)
	}
	return out
}

func pullRequestRef(pr *promoterv1alpha1.PullRequest) *promoterv1alpha1.PullRequestReference {
	state := pr.Status.State
	if state == "" {
		state = promoterv1alpha1.PullRequestOpen
	}
	return &promoterv1alpha1.PullRequestReference{Name: pr.Name, State: state, URL: pr.Status.URL}
}

// pullRequestNumber is the SCM's number of pr, 0 on plain git.
func pullRequestNumber(pr *promoterv1alpha1.PullRequest) int64 {
	n, _ := strconv.ParseInt(pr.Status.ID, 10, 64)
	return n
}

func pullRequestTitle(e environment) string {
	dry := e.Proposed.DrySHA
	if dry == "" {
		return text.Truncate(fmt.Sprintf("Promote %s to %s", text.ShortSHA(e.Proposed.HydratedSHA), e.Spec.Branch), 256)
	}
	return text.Truncate(fmt.Sprintf("Promote %s to %s: %s", text.ShortSHA(dry), e.Spec.Branch, e.Proposed.Subject), 256)
}

func pullRequestDescription(ps *promoterv1alpha1.PromotionStrategy, e environment) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Promotion by PromotionStrategy %s/%s.\n\n", ps.Namespace, ps.Name)
	fmt.Fprintf(&b, "- dry commit: %s\n- proposed commit: %s\n- active commit: %s\n",
		orDash(e.Proposed.DrySHA), e.Proposed.HydratedSHA, orDash(e.Active.HydratedSHA))
	return b.String()
}

var (
	notNameChars  = regexp.MustCompile(`[^a-z0-9-]+`)
	notLabelChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
)

// objectName is the deterministic name of an environment's PullRequest and ProposedCommit: the
// same strategy and branch always give the same name, so after a crash the controller finds the
// object it made instead of making another.
func objectName(strategy, branch string) string {
	n := strings.Trim(notNameChars.ReplaceAllString(strings.ToLower(strategy+"-"+branch), "-"), "-")
	if n != strategy+"-"+branch || len(n) > 63 {
		sum := sha256.Sum256([]byte(strategy + "\x00" + branch))
		if len(n) > 52 {
			n = strings.Trim(n[:52], "-")
		}
		n += "-" + hex.EncodeToString(sum[:])[:10]
	}
	return n
}

func labelValue(s string) string {
	v := strings.Trim(notLabelChars.ReplaceAllString(s, "-"), "-._")
	if len(v) > 63 {
		v = strings.Trim(v[:63], "-._")
	}
	return v
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
