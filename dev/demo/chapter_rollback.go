package demo

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/testenv"
)

// chapterRollback: a change reaches prod, prod's health check fails, and a RollbackPolicy opens
// and merges the revert in git. Prod is back on the last healthy dry SHA, the bad one is held, and
// a fix forward then promotes through every environment. It runs in its own namespace with its
// own repository, beside the promotion chapter's.
func chapterRollback(ctx context.Context, s *Story) error {
	defer func(ns string) { s.Namespace = ns }(s.Namespace)
	s.Namespace = "rollback"
	if _, err := s.Kubectl(ctx, "create", "namespace", s.Namespace); err != nil {
		return err
	}
	host, err := promotionHost(ctx, s)
	if err != nil {
		return err
	}
	defer host.close()
	h, closeCache, err := openHydrator(host)
	if err != nil {
		return err
	}
	defer closeCache()
	d0, err := h.dryCommit(ctx, "web 2.0.0")
	if err != nil {
		return err
	}
	for _, env := range promotionEnvs {
		if _, err := h.commit(ctx, env, d0, env+": web 2.0.0"); err != nil {
			return err
		}
	}
	s.Say("dev, staging and prod run dry %s (web 2.0.0)", d0[:7])

	s.Step("a PromotionStrategy, and a RollbackPolicy on prod: health failing for 5s within an hour of a promotion rolls it back, once kubelint passes on the revert")
	if err := s.Apply(ctx, host.manifests+rollbackManifests); err != nil {
		return err
	}
	for _, env := range promotionEnvs {
		st, err := s.waitEnvironment(ctx, "shop", env, func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA == d0 })
		if err != nil {
			return err
		}
		if err := s.setCommitStatus(ctx, "health", st.Active.HydratedSHA, commitstatusv1alpha1.CommitStatusSuccess, "web 2.0.0 healthy"); err != nil {
			return err
		}
	}
	if _, err := s.waitEnvironment(ctx, "shop", "prod", func(e promoterv1alpha1.EnvironmentStatus) bool {
		return len(e.LastHealthyDrySHAs) > 0 && e.LastHealthyDrySHAs[0].SHA == d0
	}); err != nil {
		return err
	}
	s.Say("prod recorded dry %s as healthy (status.environments[].lastHealthyDrySHAs)", d0[:7])

	bad, err := promoteEverywhere(ctx, s, h, "web 2.1.0", false)
	if err != nil {
		return err
	}
	rc, err := rollBack(ctx, s, bad)
	if err != nil {
		return err
	}
	if err := showRollback(ctx, s, host, rc, d0, bad); err != nil {
		return err
	}
	s.Step("a fix forward, web 2.1.1, is a newer dry commit: it promotes through every environment")
	fix, err := promoteEverywhere(ctx, s, h, "web 2.1.1", true)
	if err != nil {
		return err
	}
	s.Say("prod runs the fix, dry %s", fix[:7])
	_, err = s.Kubectl(ctx, "get", "promotionstrategy,revertcommits")
	return err
}

const rollbackManifests = `
---
apiVersion: promoter.sluice.dev/v1alpha1
kind: PromotionStrategy
metadata: {name: shop}
spec:
  repositoryRef: {name: web-deploy}
  dryBranch: main
  activeCommitStatuses: [{key: health}]
  environments: [{branch: dev}, {branch: staging}, {branch: prod}]
---
apiVersion: rollback.sluice.dev/v1alpha1
kind: RollbackPolicy
metadata: {name: shop-prod}
spec:
  promotionStrategyRef: {name: shop}
  environments: [prod]
  trigger:
    commitStatuses: [{key: health}]
    failureThreshold: 5s
    window: 1h
  cooldown: 1h
  autoMerge: true
  requiredCommitStatuses: [{key: kubelint}]
`

// openHydrator opens the chapter's repository in a git cache of its own.
func openHydrator(host *gitHost) (*hydrator, func(), error) {
	dir, err := os.MkdirTemp("", "sluice-demo-rollback-")
	if err != nil {
		return nil, nil, err
	}
	cache, err := git.NewCache(dir, nil)
	if err == nil {
		var repo *git.Repository
		if repo, err = cache.Open(host.url, host.auth, git.Options{}); err == nil {
			return &hydrator{repo: repo}, func() { os.RemoveAll(dir) }, nil
		}
	}
	os.RemoveAll(dir)
	return nil, nil, err
}

// promoteEverywhere commits msg to the dry branch, hydrates it onto every <env>-next and walks it
// through dev, staging and prod, each turning healthy in turn; prod turns healthy only if
// prodHealthy, else its health fails.
func promoteEverywhere(ctx context.Context, s *Story, h *hydrator, msg string, prodHealthy bool) (string, error) {
	s.Step("a developer commits %s; the hydrator renders it onto dev-next, staging-next and prod-next", msg)
	dry, err := h.dryCommit(ctx, msg)
	if err != nil {
		return "", err
	}
	for _, env := range promotionEnvs {
		if err := h.reproposeOnTop(ctx, env, dry, env+": "+msg); err != nil {
			return "", err
		}
	}
	if _, err := s.Kubectl(ctx, "annotate", "promotionstrategy", "shop", "--overwrite", promoterv1alpha1.RefreshAnnotation+"="+dry[:7]); err != nil {
		return "", err
	}
	for _, env := range promotionEnvs {
		st, err := s.waitEnvironment(ctx, "shop", env, func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA == dry })
		if err != nil {
			return "", err
		}
		phase, desc := commitstatusv1alpha1.CommitStatusSuccess, msg+" healthy"
		if env == "prod" && !prodHealthy {
			phase, desc = commitstatusv1alpha1.CommitStatusFailure, "web: 0/3 pods ready, CrashLoopBackOff"
		}
		if err := s.setCommitStatus(ctx, "health", st.Active.HydratedSHA, phase, desc); err != nil {
			return "", err
		}
		s.Say("%s runs dry %s; health=%s", env, dry[:7], phase)
	}
	return dry, nil
}

// rollBack waits for the policy's RevertCommit to wait for its check, passes the check (as a
// linter's CI would), and waits for the revert to be merged.
func rollBack(ctx context.Context, s *Story, bad string) (*rollbackv1alpha1.RevertCommit, error) {
	s.Step("prod's health check fails; after 5s the RollbackPolicy creates a RevertCommit, whose pull request waits for kubelint on the revert commit")
	rc, err := waitRevert(ctx, s, func(rc *rollbackv1alpha1.RevertCommit) bool {
		c := meta.FindStatusCondition(rc.Status.Conditions, "Ready")
		return rc.Status.Phase == rollbackv1alpha1.RevertOpen && c != nil && c.Reason == "WaitingForChecks"
	})
	if err != nil {
		return nil, errors.Join(errors.New("the revert did not wait for its check"), err)
	}
	if _, err := s.Kubectl(ctx, "get", "revertcommits", "-o", "custom-columns=NAME:.metadata.name,PHASE:.status.phase,STATUS:.status.conditions[?(@.type==\"Ready\")].message"); err != nil {
		return nil, err
	}
	if err := s.setCommitStatus(ctx, "kubelint", rc.Status.RevertSHA, commitstatusv1alpha1.CommitStatusSuccess, "manifests lint clean"); err != nil {
		return nil, err
	}
	s.Say("kubelint passed on revert commit %s: the revert may merge", rc.Status.RevertSHA[:7])
	rc, err = waitRevert(ctx, s, func(rc *rollbackv1alpha1.RevertCommit) bool { return rc.Status.Phase == rollbackv1alpha1.RevertMerged })
	if err != nil {
		return nil, errors.Join(errors.New("the revert was not merged"), err)
	}
	if rc.Status.BadDrySHA != bad {
		return nil, errors.New("the revert reverted " + rc.Status.BadDrySHA + ", not " + bad)
	}
	s.Say("RevertCommit %s: %s", rc.Name, rc.Spec.Reason)
	return rc, nil
}

// waitRevert waits for the chapter's RevertCommit to satisfy cond.
func waitRevert(ctx context.Context, s *Story, cond func(*rollbackv1alpha1.RevertCommit) bool) (*rollbackv1alpha1.RevertCommit, error) {
	var rc *rollbackv1alpha1.RevertCommit
	err := testenv.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		list, err := s.Env.Sluice.RollbackV1alpha1().RevertCommits(s.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		rc = &list.Items[0]
		return cond(rc), nil
	})
	return rc, err
}

// showRollback shows the revert in the cluster and in git.
func showRollback(ctx context.Context, s *Story, host *gitHost, rc *rollbackv1alpha1.RevertCommit, healthy, bad string) error {
	if _, err := s.Kubectl(ctx, "get", "revertcommits,rollbackpolicies,pullrequests"); err != nil {
		return err
	}
	if host.pulls != nil {
		if err := host.pulls(ctx); err != nil {
			return err
		}
	}
	if _, err := s.Kubectl(ctx, "annotate", "promotionstrategy", "shop", "--overwrite", promoterv1alpha1.RefreshAnnotation+"=reverted"); err != nil {
		return err
	}
	prod, err := s.waitEnvironment(ctx, "shop", "prod", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA == healthy })
	if err != nil {
		return err
	}
	s.Say("prod is back on the last healthy dry SHA %s: revert commit %s on %s, its tree the healthy commit's, merged as %s",
		healthy[:7], rc.Status.RevertSHA[:7], rc.Status.RevertBranch, shortOf(prod.Active.HydratedSHA))
	s.Say("dry %s is held from prod: the promoter-controller reads the RevertCommit's status and promotes nothing that old there again", bad[:7])
	s.Say("(lift the hold by deleting the RevertCommit, or annotating it %s)", rollbackv1alpha1.LiftHoldAnnotation)
	_, err = s.Kubectl(ctx, "get", "events", "--field-selector", "involvedObject.kind=RevertCommit", "-o", "custom-columns=REASON:.reason,MESSAGE:.message")
	return err
}

// reproposeOnTop renders dry onto <env>-next again, started from <env> (which contains the last
// proposal), and notes the dry SHA.
func (h *hydrator) reproposeOnTop(ctx context.Context, env, dry, msg string) error {
	err := h.repo.Fetch(ctx, env, env+"-next")
	var missing *git.BranchNotFoundError
	if err != nil && !errors.As(err, &missing) {
		return err
	}
	tip, err := h.repo.Resolve(env)
	if err != nil {
		return err
	}
	next, _ := h.repo.Resolve(env + "-next")
	if err := h.repo.Push(ctx, env+"-next", tip, next); err != nil {
		return err
	}
	sha, err := h.commit(ctx, env+"-next", dry, msg)
	if err != nil {
		return err
	}
	_ = h.repo.Fetch(ctx, env+"-next")
	return h.repo.AddNote(ctx, sha, git.HydratorNote(dry), git.Identity{Name: "hydrator", Email: "hydrator@example.com"})
}

// setCommitStatus writes a check on a hydrated commit, as the health-controller does.
func (s *Story) setCommitStatus(ctx context.Context, key, sha string, phase commitstatusv1alpha1.CommitStatusPhase, description string) error {
	name := key + "-" + sha[:12]
	_, err := testenv.Update(ctx, s.Env.Sluice.CommitstatusV1alpha1().CommitStatuses(s.Namespace), name, func(cs *commitstatusv1alpha1.CommitStatus) {
		cs.Spec.Phase, cs.Spec.Description = phase, description
	})
	if err == nil || !strings.Contains(err.Error(), "not found") {
		return err
	}
	_, err = s.Env.Sluice.CommitstatusV1alpha1().CommitStatuses(s.Namespace).Create(ctx, &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{commitstatusv1alpha1.KeyLabel: key}},
		Spec: commitstatusv1alpha1.CommitStatusSpec{RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: "web-deploy"},
			SHA: sha, Name: key, Phase: phase, Description: description},
	}, metav1.CreateOptions{})
	return err
}
