package testenv

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
)

// Environment is the status of environment branch in ps's status, and whether it has one.
func Environment(ps *promoterv1alpha1.PromotionStrategy, branch string) (promoterv1alpha1.EnvironmentStatus, bool) {
	for _, e := range ps.Status.Environments {
		if e.Branch == branch {
			return e, true
		}
	}
	return promoterv1alpha1.EnvironmentStatus{}, false
}

// WaitEnvironment reads PromotionStrategy namespace/strategy until cond holds for the status of
// its environment branch, and returns that status. When timeout passes first it returns the
// status it saw last with the error, for the test to say what it waited for.
func WaitEnvironment(ctx context.Context, timeout time.Duration, client sluice.Interface, namespace, strategy, branch string,
	cond func(promoterv1alpha1.EnvironmentStatus) bool) (promoterv1alpha1.EnvironmentStatus, error) {
	var last promoterv1alpha1.EnvironmentStatus
	err := Wait(ctx, timeout, func(ctx context.Context) (bool, error) {
		ps, err := client.PromoterV1alpha1().PromotionStrategies(namespace).Get(ctx, strategy, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		e, found := Environment(ps, branch)
		if found {
			last = e
		}
		return found && cond(e), nil
	})
	return last, err
}

// ActiveOn holds once the environment runs dry.
func ActiveOn(dry string) func(promoterv1alpha1.EnvironmentStatus) bool {
	return func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA == dry }
}

// PromotedTo holds once the environment runs dry and its history records it: git shows a merge
// before the PullRequest's status does, and history follows the latter.
func PromotedTo(dry string) func(promoterv1alpha1.EnvironmentStatus) bool {
	return func(e promoterv1alpha1.EnvironmentStatus) bool {
		return e.Active.DrySHA == dry && len(e.History) > 0 && e.History[0].DrySHA == dry
	}
}
