package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

// promotionEnvs are the environments of the promotion chapter, in order.
var promotionEnvs = []string{"dev", "staging", "prod"}

// promotion: a dry commit is hydrated onto dev-next, staging-next and prod-next by the demo itself
// (acting as the hydrator), promoted through dev and staging by merges the promoter-controller
// makes, held at prod by a closed Gate, released, and promoted. Each environment branch is
// deployed by its own GitRepository and Kustomization on real Flux, and a HealthCheck of what Flux
// applied there gates the next environment. The repository is served over HTTP by the demo; with
// SCM=gitea it lives on a local Gitea, where the pull requests are opened and merged.
type promotion struct {
	s      *Story
	host   *gitHost
	h      *hydrator
	d0, d1 string
}

func chapterPromotion(ctx context.Context, s *Story) error {
	p := &promotion{s: s}
	defer func() {
		if p.host != nil {
			p.host.close()
		}
	}()
	return runSteps(ctx, p.hydrateFirst, p.deployEnvironments, p.createStrategy, p.newDryCommit,
		p.devThenStaging, p.prodHeld, p.signOff)
}

func (p *promotion) hydrateFirst(ctx context.Context) error {
	s := p.s
	var err error
	if p.host, err = promotionHost(ctx, s, "web-deploy"); err != nil {
		return err
	}
	if p.h, err = p.host.hydrator("web", ""); err != nil {
		return err
	}
	if p.d0, err = p.h.dryCommit(ctx, "1.0.0"); err != nil {
		return err
	}
	for _, env := range promotionEnvs {
		if _, err := p.h.commit(ctx, env, p.d0, "1.0.0"); err != nil {
			return err
		}
	}
	s.Say("%s: branch main (dry) at %s; dev, staging and prod hydrated from it", p.host.url, p.d0[:7])
	return nil
}

func (p *promotion) deployEnvironments(ctx context.Context) error {
	return p.s.deployEnvironments(ctx, p.host, "web", p.d0)
}

func (p *promotion) createStrategy(ctx context.Context) error {
	s := p.s
	s.Step("a PromotionStrategy: dev -> staging -> prod, each waiting for the previous one's health, prod behind a Gate")
	if err := s.Apply(ctx, p.host.manifests+`
---
apiVersion: gating.sluice.dev/v1alpha1
kind: Gate
metadata: {name: prod-release}
spec:
  closed: true
  message: release sign-off pending
---
apiVersion: promoter.sluice.dev/v1alpha1
kind: PromotionStrategy
metadata: {name: web}
spec:
  repositoryRef: {name: web-deploy}
  dryBranch: main
  activeCommitStatuses: [{key: health}]   # written by each environment's HealthCheck
  environments:
    - branch: dev
    - branch: staging
    - branch: prod
      gates: {refs: [{name: prod-release}]}
`); err != nil {
		return err
	}
	return s.waitGate(ctx, "prod-release", func(g *gatingv1alpha1.Gate) bool { return !g.Status.Open })
}

func (p *promotion) newDryCommit(ctx context.Context) error {
	s := p.s
	s.Step("a developer commits to the dry branch; the hydrator renders it onto dev-next, staging-next and prod-next with hydrator notes")
	var err error
	if p.d1, err = p.h.dryCommit(ctx, "1.1.0"); err != nil {
		return err
	}
	for _, env := range promotionEnvs {
		if err := p.h.propose(ctx, env, p.d1, "1.1.0"); err != nil {
			return err
		}
	}
	s.Say("dry commit %s; the hydrator's CI asks for a refresh (on GitHub, GitLab or Gitea a signed webhook does it)", p.d1[:7])
	_, err = s.Kubectl(ctx, "annotate", "promotionstrategy", "web", "--overwrite", promoterv1alpha1.RefreshAnnotation+"="+p.d1[:7])
	return err
}

func (p *promotion) devThenStaging(ctx context.Context) error {
	s := p.s
	s.Step("the promoter merges dev-next into dev at once (dev has no earlier environment) and asks Flux to fetch dev")
	if _, err := s.waitEnvironment(ctx, "web", "dev", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA == p.d1 }); err != nil {
		return err
	}
	if err := s.waitEnvironmentApplied(ctx, "web", "dev", p.d1); err != nil {
		return err
	}
	s.Step("staging waits for the health of what Flux applied in dev; once it is success, staging is promoted and applied")
	if _, err := s.waitEnvironment(ctx, "web", "staging", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA == p.d1 }); err != nil {
		return err
	}
	if err := s.waitEnvironmentApplied(ctx, "web", "staging", p.d1); err != nil {
		return err
	}
	_, err := s.Kubectl(ctx, "get", "commitstatuses", "-l", commitstatusv1alpha1.KeyLabel+"=health", "-o",
		"custom-columns=NAME:.metadata.name,SHA:.spec.sha,PHASE:.spec.phase,DESCRIPTION:.spec.description")
	return err
}

func (p *promotion) prodHeld(ctx context.Context) error {
	s := p.s
	s.Step("staging is healthy too, but the closed Gate holds prod")
	prod, err := s.waitEnvironment(ctx, "web", "prod", func(e promoterv1alpha1.EnvironmentStatus) bool {
		// Only the gate holds it now: rules 2 and 3 pass.
		return strings.HasPrefix(e.Blocked, "gates hold") && e.Active.DrySHA != p.d1
	})
	if err != nil {
		return err
	}
	s.Say("prod: %s", prod.Blocked)
	_, err = s.Kubectl(ctx, "get", "configmap", "web-prod", "-o", `jsonpath=prod's cluster runs version {.data.version}{"\n"}`)
	return err
}

func (p *promotion) signOff(ctx context.Context) error {
	s := p.s
	s.Step("release sign-off: the Gate opens, prod is promoted, and Flux applies it")
	if err := s.Apply(ctx, `
apiVersion: gating.sluice.dev/v1alpha1
kind: Gate
metadata: {name: prod-release}
spec:
  closed: false
`); err != nil {
		return err
	}
	prod, err := s.waitEnvironment(ctx, "web", "prod", func(e promoterv1alpha1.EnvironmentStatus) bool {
		return e.Active.DrySHA == p.d1 && len(e.History) > 0
	})
	if err != nil {
		return err
	}
	s.Say("prod runs dry %s (merge %s)", p.d1[:7], shortOf(prod.History[0].MergeSHA))
	if err := s.waitEnvironmentApplied(ctx, "web", "prod", p.d1); err != nil {
		return err
	}
	if p.host.pulls != nil {
		if err := p.host.pulls(ctx); err != nil {
			return err
		}
	}
	if _, err := s.Kubectl(ctx, "get", "promotionstrategy,pullrequests,proposedcommits,kustomizations"); err != nil {
		return err
	}
	_, err = s.Kubectl(ctx, "get", "events", "--field-selector", "involvedObject.kind=PromotionStrategy", "-o", "custom-columns=REASON:.reason,MESSAGE:.message")
	return err
}

// waitEnvironment waits until an environment of a strategy satisfies cond.
func (s *Story) waitEnvironment(ctx context.Context, strategy, branch string, cond func(promoterv1alpha1.EnvironmentStatus) bool) (promoterv1alpha1.EnvironmentStatus, error) {
	var last promoterv1alpha1.EnvironmentStatus
	err := testenv.Wait(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		ps, err := s.Env.Sluice.PromoterV1alpha1().PromotionStrategies(s.Namespace).Get(ctx, strategy, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range ps.Status.Environments {
			if e.Branch == branch {
				last = e
				return cond(e), nil
			}
		}
		return false, nil
	})
	if err != nil {
		return last, fmt.Errorf("environment %s of %s: %w (last status: active dry %q, blocked %q)", branch, strategy, err, last.Active.DrySHA, last.Blocked)
	}
	return last, nil
}
