package promoter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
	"github.com/sluicehq/sluice/pkg/promotion"
)

var notNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

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

func ownerRef(ps *promoterv1alpha1.PromotionStrategy) []metav1.OwnerReference {
	return []metav1.OwnerReference{*metav1.NewControllerRef(ps, promoterv1alpha1.SchemeGroupVersion.WithKind("PromotionStrategy"))}
}

func autoMerge(e promoterv1alpha1.Environment) bool { return e.AutoMerge == nil || *e.AutoMerge }

// syncPullRequest makes the environment's PullRequest match the verdict, and reports "merging"
// while a merge it asked for is under way.
func (r *StrategyReconciler) syncPullRequest(ctx context.Context, ps *promoterv1alpha1.PromotionStrategy, repo *repository, suffix string, p *envPlan, later *announcements) (string, error) {
	client := r.Client.PromoterV1alpha1().PullRequests(ps.Namespace)
	name := objectName(ps.Name, p.spec.Branch)
	// A live read, not the cache: right after a create the cache may not have it yet, and
	// creating twice is what must never happen.
	pr, err := client.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		pr = nil
	case err != nil:
		return "", err
	}
	if pr != nil && pr.Status.State == promoterv1alpha1.PullRequestMerged {
		r.recordMerge(ps, repo, p, pr, later)
	}
	done := pr != nil && (pr.Status.State == promoterv1alpha1.PullRequestMerged || pr.Status.State == promoterv1alpha1.PullRequestClosed)
	if pr != nil && !done && r.PullRequestQueue != nil {
		// The branches moved (this reconcile fetched them): let the pull request see whether
		// someone merged it outside Sluice.
		r.PullRequestQueue.Enqueue(ps.Namespace + "/" + name)
	}
	if done && p.verdict.Proposed && pr.Spec.ExpectedHeadSHA != p.proposed && pr.Status.MergedHeadSHA != p.proposed {
		// A new proposal after a finished pull request: replace it.
		uid := pr.UID
		if err := client.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			return "", err
		}
		pr, done = nil, false
	}
	if !p.verdict.Proposed {
		p.status.PullRequest = nil
		if pr == nil {
			return "", nil
		}
		if !done && p.proposed == "" && pr.Spec.State != promoterv1alpha1.PullRequestClosed {
			// The proposed branch is gone: nothing is left to merge.
			next := pr.DeepCopy()
			next.Spec.State = promoterv1alpha1.PullRequestClosed
			updated, err := client.Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
			if err != nil {
				return "", fmt.Errorf("close PullRequest %s: %w", name, err)
			}
			pr = updated
		}
		p.status.PullRequest = prRef(pr)
		return "", nil
	}
	if done {
		p.status.PullRequest = prRef(pr)
		if pr.Status.State == promoterv1alpha1.PullRequestClosed {
			p.status.Blocked = truncate("the pull request was closed without merging; push a new proposed commit to open another. "+p.status.Blocked, 1024)
		}
		return "", nil
	}

	desired := promoterv1alpha1.PullRequestSpec{
		RepositoryRef: ps.Spec.RepositoryRef,
		Title:         prTitle(p),
		Description:   prDescription(ps, p),
		SourceBranch:  p.spec.Branch + suffix,
		TargetBranch:  p.spec.Branch,
		// The head is pinned even while the pull request waits: a merge by hand on an SCM
		// is the person's call, but Sluice never merges anything but the commit it checked.
		ExpectedHeadSHA: p.proposed,
		State:           promoterv1alpha1.PullRequestOpen,
	}
	if p.verdict.Eligible && autoMerge(p.spec) {
		desired.State = promoterv1alpha1.PullRequestMerged
	}
	if pr == nil {
		pr = &promoterv1alpha1.PullRequest{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: ps.Namespace, OwnerReferences: ownerRef(ps),
				Labels: map[string]string{promoterv1alpha1.StrategyLabel: ps.Name, promoterv1alpha1.EnvironmentLabel: labelValue(p.spec.Branch)},
			},
			Spec: desired,
		}
		created, err := client.Create(ctx, pr, metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			return "", fmt.Errorf("create PullRequest %s: %w", name, err)
		}
		pr = created
		if desired.State == promoterv1alpha1.PullRequestMerged {
			r.started(ps, p)
		}
	} else {
		next := pr.DeepCopy()
		next.Spec.Title, next.Spec.Description, next.Spec.ExpectedHeadSHA = desired.Title, desired.Description, desired.ExpectedHeadSHA
		// With autoMerge off, the state is a person's to set (merged, closed): leave it.
		if autoMerge(p.spec) || next.Spec.ExpectedHeadSHA != pr.Spec.ExpectedHeadSHA {
			next.Spec.State = desired.State
		}
		if !equality.Semantic.DeepEqual(next.Spec, pr.Spec) {
			updated, err := client.Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
			if err != nil {
				return "", fmt.Errorf("update PullRequest %s: %w", name, err)
			}
			if next.Spec.State == promoterv1alpha1.PullRequestMerged && pr.Spec.State != promoterv1alpha1.PullRequestMerged && autoMerge(p.spec) {
				r.started(ps, p)
			}
			pr = updated
		}
	}
	p.status.PullRequest = prRef(pr)
	if pr.Spec.State == promoterv1alpha1.PullRequestMerged && pr.Status.State != promoterv1alpha1.PullRequestMerged {
		return "merging", nil
	}
	return "", nil
}

func (r *StrategyReconciler) started(ps *promoterv1alpha1.PromotionStrategy, p *envPlan) {
	r.Recorder.Eventf(ps, corev1.EventTypeNormal, EventPromotionStarted, "%s: merging %s (dry %s)", p.spec.Branch, shortSHA(p.proposed), shortSHA(p.status.Proposed.DrySHA))
}

// recordMerge adds a merged pull request to history, once, with its Event and metrics.
func (r *StrategyReconciler) recordMerge(ps *promoterv1alpha1.PromotionStrategy, repo *repository, p *envPlan, pr *promoterv1alpha1.PullRequest, later *announcements) {
	rec := promoterv1alpha1.PromotionRecord{
		HydratedSHA: pr.Status.MergedHeadSHA, MergeSHA: pr.Status.MergeSHA,
		PullRequest: pr.Name, External: pr.Status.MergedExternally, Time: metav1.NewTime(r.now()),
	}
	if pr.Status.MergeTime != nil {
		rec.Time = *pr.Status.MergeTime
	}
	for _, h := range p.status.History {
		if h.MergeSHA == rec.MergeSHA && h.HydratedSHA == rec.HydratedSHA {
			return
		}
	}
	rec.DrySHA, _ = drySHAOf(repo.git, rec.HydratedSHA)
	p.status.History = promotion.RecordPromotion(p.status.History, rec)

	mergedBy := "sluice"
	if rec.External {
		mergedBy = "external"
	}
	var lead time.Duration = -1
	if rec.DrySHA != "" {
		if c, err := repo.git.Commit(rec.DrySHA); err == nil {
			lead = rec.Time.Sub(c.Time)
		}
	}
	branch := p.spec.Branch
	later.add(func() {
		if rec.External {
			r.Recorder.Eventf(ps, corev1.EventTypeNormal, EventPullRequestMergedExternally, "%s: %s (dry %s) was merged outside Sluice", branch, shortSHA(rec.HydratedSHA), shortSHA(rec.DrySHA))
		}
		r.Recorder.Eventf(ps, corev1.EventTypeNormal, EventPromotionCompleted, "%s: promoted dry %s (merge %s)", branch, shortSHA(rec.DrySHA), shortSHA(rec.MergeSHA))
		r.Metrics.promotions.WithLabelValues(ps.Namespace, ps.Name, branch, mergedBy).Inc()
		r.Metrics.deployments.WithLabelValues(ps.Namespace, ps.Name, branch).Inc()
		if lead >= 0 {
			r.Metrics.leadTime.WithLabelValues(ps.Namespace, ps.Name, branch).Observe(lead.Seconds())
		}
	})
}

func prRef(pr *promoterv1alpha1.PullRequest) *promoterv1alpha1.PullRequestReference {
	state := pr.Status.State
	if state == "" {
		state = promoterv1alpha1.PullRequestOpen
	}
	return &promoterv1alpha1.PullRequestReference{Name: pr.Name, State: state, URL: pr.Status.URL}
}

func prTitle(p *envPlan) string {
	dry := p.status.Proposed.DrySHA
	if dry == "" {
		return truncate(fmt.Sprintf("Promote %s to %s", shortSHA(p.proposed), p.spec.Branch), 256)
	}
	return truncate(fmt.Sprintf("Promote %s to %s: %s", shortSHA(dry), p.spec.Branch, p.status.Proposed.Subject), 256)
}

func prDescription(ps *promoterv1alpha1.PromotionStrategy, p *envPlan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Promotion by PromotionStrategy %s/%s.\n\n", ps.Namespace, ps.Name)
	fmt.Fprintf(&b, "- dry commit: %s\n- proposed commit: %s\n- active commit: %s\n", orDash(p.status.Proposed.DrySHA), p.proposed, orDash(p.status.Active.HydratedSHA))
	return b.String()
}

func labelValue(s string) string {
	v := strings.Trim(regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(s, "-"), "-._")
	if len(v) > 63 {
		v = strings.Trim(v[:63], "-._")
	}
	return v
}

// syncProposedCommit writes the environment's ProposedCommit: its spec from the strategy, its
// status from this reconcile.
func (r *StrategyReconciler) syncProposedCommit(ctx context.Context, ps *promoterv1alpha1.PromotionStrategy, p *envPlan, suffix string) error {
	client := r.Client.PromoterV1alpha1().ProposedCommits(ps.Namespace)
	name := objectName(ps.Name, p.spec.Branch)
	spec := promoterv1alpha1.ProposedCommitSpec{
		RepositoryRef:          ps.Spec.RepositoryRef,
		ProposedBranch:         p.spec.Branch + suffix,
		ActiveBranch:           p.spec.Branch,
		ProposedCommitStatuses: selectors(keys(ps.Spec.ProposedCommitStatuses, p.spec.ProposedCommitStatuses)),
		ActiveCommitStatuses:   selectors(keys(ps.Spec.ActiveCommitStatuses, p.spec.ActiveCommitStatuses)),
	}
	cur, err := r.Proposed.ProposedCommits(ps.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		pc := &promoterv1alpha1.ProposedCommit{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: ps.Namespace, OwnerReferences: ownerRef(ps),
				Labels: map[string]string{promoterv1alpha1.StrategyLabel: ps.Name, promoterv1alpha1.EnvironmentLabel: labelValue(p.spec.Branch)},
			},
			Spec: spec,
		}
		cur, err = client.Create(ctx, pc, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			cur, err = client.Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("ProposedCommit %s: %w", name, err)
	}
	if !equality.Semantic.DeepEqual(cur.Spec, spec) {
		next := cur.DeepCopy()
		next.Spec = spec
		if cur, err = client.Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("update ProposedCommit %s: %w", name, err)
		}
	}
	next := cur.DeepCopy()
	next.Status.ObservedGeneration = cur.Generation
	next.Status.Proposed, next.Status.Active = p.status.Proposed, p.status.Active
	switch {
	case !p.verdict.Proposed:
		conditions.MarkReady(&next.Status.Conditions, cur.Generation, "UpToDate", "nothing to promote")
	case p.verdict.Eligible:
		conditions.MarkReady(&next.Status.Conditions, cur.Generation, "Eligible", "eligible for promotion")
	default:
		conditions.MarkNotReady(&next.Status.Conditions, cur.Generation, "Blocked", truncate(p.verdict.Message(), 1024))
	}
	if equality.Semantic.DeepEqual(next.Status, cur.Status) {
		return nil
	}
	_, err = client.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}

func selectors(keys []string) []promoterv1alpha1.CommitStatusSelector {
	if len(keys) == 0 {
		return nil
	}
	out := make([]promoterv1alpha1.CommitStatusSelector, len(keys))
	for i, k := range keys {
		out[i].Key = k
	}
	return out
}
