package demo

import (
	"context"
	"errors"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

// rollback: a change reaches prod, and what Flux applied there fails its health check; a
// RollbackPolicy opens and merges the revert in git, Flux applies the revert, and prod's health
// recovers. Prod is back on the last healthy dry SHA, the bad one is held, and a fix forward then
// promotes through every environment. It runs in its own namespace with its own repository,
// beside the promotion chapter's.
type rollback struct {
	s    *Story
	host *gitHost
	h    *hydrator
	// healthy, bad and fix are the dry commits of web 2.0.0, 2.1.0 and 2.1.1.
	healthy, bad, fix string
	rc                *rollbackv1alpha1.RevertCommit
	// revertMerge is prod's commit once the revert is merged; failed is when its health failed.
	revertMerge string
	failed      time.Time
}

func chapterRollback(ctx context.Context, s *Story) error {
	defer func(ns string) { s.Namespace = ns }(s.Namespace)
	s.Namespace = "rollback"
	if _, err := s.Kubectl(ctx, "create", "namespace", s.Namespace); err != nil {
		return err
	}
	r := &rollback{s: s}
	defer func() {
		if r.host != nil {
			r.host.close()
		}
	}()
	return runSteps(ctx, r.hydrateFirst, r.deployEnvironments, r.createPolicy,
		func(ctx context.Context) (err error) {
			r.bad, err = promoteEverywhere(ctx, s, r.h, "2.1.0")
			return err
		},
		r.rollBack, r.fluxAppliesRevert, r.showRollback, r.fixForward)
}

func (r *rollback) hydrateFirst(ctx context.Context) error {
	s := r.s
	var err error
	if r.host, err = promotionHost(ctx, s, "shop-deploy"); err != nil {
		return err
	}
	// web 2.1.0 reads a setting only prod lacks: healthy in dev and staging, failing in prod.
	if r.h, err = r.host.hydrator("shop", "2.1.0"); err != nil {
		return err
	}
	if r.healthy, err = r.h.dryCommit(ctx, "2.0.0"); err != nil {
		return err
	}
	for _, env := range promotionEnvs {
		if _, err := r.h.commit(ctx, env, r.healthy, "2.0.0"); err != nil {
			return err
		}
	}
	s.Say("dev, staging and prod are hydrated from dry %s (web 2.0.0)", r.healthy[:7])
	return nil
}

func (r *rollback) deployEnvironments(ctx context.Context) error {
	return r.s.deployEnvironments(ctx, r.host, "shop", r.healthy)
}

func (r *rollback) createPolicy(ctx context.Context) error {
	s := r.s
	s.Step("a PromotionStrategy, and a RollbackPolicy on prod: health failing for 5s within an hour of a promotion rolls it back, once kubelint passes on the revert")
	if err := s.Apply(ctx, r.host.manifests+rollbackManifests); err != nil {
		return err
	}
	if _, err := s.waitEnvironment(ctx, "shop", "prod", func(e promoterv1alpha1.EnvironmentStatus) bool {
		return len(e.LastHealthyDrySHAs) > 0 && e.LastHealthyDrySHAs[0].SHA == r.healthy
	}); err != nil {
		return err
	}
	s.Say("prod's HealthCheck passed on what Flux applied: dry %s recorded as healthy (status.environments[].lastHealthyDrySHAs)", r.healthy[:7])
	return nil
}

func (r *rollback) fixForward(ctx context.Context) error {
	s := r.s
	s.Step("a fix forward, web 2.1.1, is a newer dry commit: it promotes through every environment")
	var err error
	if r.fix, err = promoteEverywhere(ctx, s, r.h, "2.1.1"); err != nil {
		return err
	}
	s.Say("prod runs the fix, dry %s, healthy", r.fix[:7])
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

// promoteEverywhere commits version to the dry branch, hydrates it onto every <env>-next and
// follows it through dev, staging and prod: each merge is applied by Flux, and its HealthCheck's
// verdict lets the next environment's promotion go ahead. It returns the dry commit once prod's
// health has a verdict on it, success or failure.
func promoteEverywhere(ctx context.Context, s *Story, h *hydrator, version string) (string, error) {
	s.Step("a developer commits web %s; the hydrator renders it onto dev-next, staging-next and prod-next", version)
	dry, err := h.dryCommit(ctx, version)
	if err != nil {
		return "", err
	}
	for _, env := range promotionEnvs {
		if err := h.reproposeOnTop(ctx, env, dry, version); err != nil {
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
		if err := s.waitEnvironmentApplied(ctx, h.app, env, dry); err != nil {
			return "", err
		}
		phase := commitstatusv1alpha1.CommitStatusSuccess
		if env == "prod" && version == h.badInProd {
			phase = commitstatusv1alpha1.CommitStatusFailure
		}
		if err := waitCommitStatus(ctx, s, h.app+"-"+env, st.Active.HydratedSHA, phase); err != nil {
			return "", err
		}
	}
	return dry, nil
}

// rollBack waits for the policy's RevertCommit to wait for its check, passes the check (as a
// linter's CI would), waits for the revert to be merged, then for Flux to apply it and prod's
// health to recover.
func (r *rollback) rollBack(ctx context.Context) error {
	s := r.s
	failed := time.Now()
	s.Step("prod's health check fails on what Flux applied; after 5s the RollbackPolicy creates a RevertCommit, whose pull request waits for kubelint on the revert commit")
	rc, err := waitRevert(ctx, s, func(rc *rollbackv1alpha1.RevertCommit) bool {
		c := meta.FindStatusCondition(rc.Status.Conditions, "Ready")
		return rc.Status.Phase == rollbackv1alpha1.RevertOpen && c != nil && c.Reason == "WaitingForChecks"
	})
	if err != nil {
		return errors.Join(errors.New("the revert did not wait for its check"), err)
	}
	if _, err := s.Kubectl(ctx, "get", "revertcommits", "-o", "custom-columns=NAME:.metadata.name,PHASE:.status.phase,STATUS:.status.conditions[?(@.type==\"Ready\")].message"); err != nil {
		return err
	}
	if err := s.setCommitStatus(ctx, "kubelint", rc.Status.RevertSHA, commitstatusv1alpha1.CommitStatusSuccess, "manifests lint clean"); err != nil {
		return err
	}
	s.Say("kubelint passed on revert commit %s: the revert may merge", rc.Status.RevertSHA[:7])
	if r.rc, err = waitRevert(ctx, s, func(rc *rollbackv1alpha1.RevertCommit) bool { return rc.Status.Phase == rollbackv1alpha1.RevertMerged }); err != nil {
		return errors.Join(errors.New("the revert was not merged"), err)
	}
	if r.rc.Status.BadDrySHA != r.bad {
		return errors.New("the revert reverted " + r.rc.Status.BadDrySHA + ", not " + r.bad)
	}
	s.Say("RevertCommit %s: %s", r.rc.Name, r.rc.Spec.Reason)
	r.failed = failed
	return nil
}

// fluxAppliesRevert waits for Flux to apply the merged revert, which the rollback-controller
// asked it to fetch at once, and for prod's health to be success on it.
func (r *rollback) fluxAppliesRevert(ctx context.Context) error {
	s := r.s
	s.Step("the rollback-controller asks Flux to fetch prod at once; Flux applies the revert and prod's health recovers")
	if err := s.waitEnvironmentApplied(ctx, "shop", "prod", r.healthy); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "annotate", "promotionstrategy", "shop", "--overwrite", promoterv1alpha1.RefreshAnnotation+"=reverted"); err != nil {
		return err
	}
	prod, err := s.waitEnvironment(ctx, "shop", "prod", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA == r.healthy })
	if err != nil {
		return err
	}
	r.revertMerge = prod.Active.HydratedSHA
	if err := waitCommitStatus(ctx, s, "shop-prod", r.revertMerge, commitstatusv1alpha1.CommitStatusSuccess); err != nil {
		return err
	}
	s.Say("from prod's failing health check to Flux having applied the revert, healthy again: %.1fs", time.Since(r.failed).Seconds())
	return nil
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
func (r *rollback) showRollback(ctx context.Context) error {
	s, host, rc, healthy, bad := r.s, r.host, r.rc, r.healthy, r.bad
	if _, err := s.Kubectl(ctx, "get", "revertcommits,rollbackpolicies,pullrequests"); err != nil {
		return err
	}
	if host.pulls != nil {
		if err := host.pulls(ctx); err != nil {
			return err
		}
	}
	s.Say("prod is back on the last healthy dry SHA %s: revert commit %s on %s, its tree the healthy commit's, merged as %s",
		healthy[:7], rc.Status.RevertSHA[:7], rc.Status.RevertBranch, shortOf(r.revertMerge))
	s.Say("dry %s is held from prod: the promoter-controller reads the RevertCommit's status and promotes nothing that old there again", bad[:7])
	s.Say("(lift the hold by deleting the RevertCommit, or annotating it %s)", rollbackv1alpha1.LiftHoldAnnotation)
	_, err := s.Kubectl(ctx, "get", "events", "--field-selector", "involvedObject.kind=RevertCommit", "-o", "custom-columns=REASON:.reason,MESSAGE:.message")
	return err
}

// setCommitStatus writes a check on a commit, as a CI system does.
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
