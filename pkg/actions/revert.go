package actions

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackclient "github.com/sluicehq/sluice/api/generated/clientset/versioned/typed/rollback/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// Revert asks the rollback-controller to take an environment back to a dry SHA.
type Revert struct {
	// Strategy is the PromotionStrategy, in the namespace of the client.
	Strategy string
	// Branch is the environment's branch.
	Branch string
	// SHA is the dry commit to go back to: one of RevertTargets.
	SHA string
	// Reason goes into the revert commit, its pull request and the Events.
	Reason string
}

// RevertTargets are the dry SHAs an environment can go back to: the ones seen healthy in it,
// newest first, except the one it runs. ok is false when the strategy has no such environment.
func RevertTargets(ps *promoterv1alpha1.PromotionStrategy, branch string) (targets []promoterv1alpha1.HealthyDrySHA, ok bool) {
	for _, env := range ps.Status.Environments {
		if env.Branch != branch {
			continue
		}
		for _, h := range env.LastHealthyDrySHAs {
			if h.SHA != env.Active.DrySHA {
				targets = append(targets, h)
			}
		}
		return targets, true
	}
	return nil, false
}

// CheckRevert says, in words a person can act on, why r cannot go ahead on ps; nil if it can.
func CheckRevert(ps *promoterv1alpha1.PromotionStrategy, r Revert) error {
	targets, ok := RevertTargets(ps, r.Branch)
	if !ok {
		var branches []string
		for _, env := range ps.Status.Environments {
			branches = append(branches, env.Branch)
		}
		return fmt.Errorf("PromotionStrategy %s/%s has no environment %q; its environments: %s", ps.Namespace, ps.Name, r.Branch, strings.Join(branches, ", "))
	}
	var shas []string
	for _, t := range targets {
		if t.SHA == r.SHA {
			return nil
		}
		shas = append(shas, t.SHA)
	}
	if len(shas) == 0 {
		return fmt.Errorf("environment %s of %s/%s has no healthy dry SHA to go back to, other than the one it runs", r.Branch, ps.Namespace, ps.Name)
	}
	return fmt.Errorf("%q is not a healthy dry SHA of environment %s of %s/%s to go back to; choose one of: %s", r.SHA, r.Branch, ps.Namespace, ps.Name, strings.Join(shas, ", "))
}

// CreateRevert creates the RevertCommit of r, which the rollback-controller writes and merges.
func CreateRevert(ctx context.Context, reverts rollbackclient.RevertCommitInterface, r Revert, fieldManager string) (*rollbackv1alpha1.RevertCommit, error) {
	rc := &rollbackv1alpha1.RevertCommit{
		ObjectMeta: metav1.ObjectMeta{GenerateName: RevertNamePrefix(r.Strategy, r.Branch)},
		Spec: rollbackv1alpha1.RevertCommitSpec{
			PromotionStrategyRef: rollbackv1alpha1.PromotionStrategyReference{Name: r.Strategy},
			ActiveBranch:         r.Branch, DrySHA: r.SHA, Reason: r.Reason,
		},
	}
	return reverts.Create(ctx, rc, metav1.CreateOptions{FieldManager: fieldManager})
}

// RevertNamePrefix is the generateName of a RevertCommit a person starts: the strategy and the
// environment's branch, which may hold characters no object name can (env/prod becomes
// env-prod), ending in '-' for the API server's random suffix.
func RevertNamePrefix(strategy, branch string) string {
	prefix := strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.':
			return c
		case c >= 'A' && c <= 'Z':
			return c + 'a' - 'A'
		}
		return '-'
	}, strategy+"-"+branch)
	// A name is at most 253 characters; the API server adds 5.
	if len(prefix) > 200 {
		prefix = prefix[:200]
	}
	return strings.TrimRight(prefix, "-.") + "-"
}
