package plugin

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/conditions"
)

func newPromoteCommand(c *cluster) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "promote",
		Short: "Show where a PromotionStrategy's changes are, and what holds them",
		Args:  usageArgs(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return usageError("name a command: status") },
	}
	cmd.AddCommand(newPromoteStatusCommand(c))
	return cmd
}

func newPromoteStatusCommand(c *cluster) *cobra.Command {
	return &cobra.Command{
		Use:   "status STRATEGY",
		Short: "List a PromotionStrategy's environments: what runs, what waits, and why",
		Long: `List each environment of the PromotionStrategy, in order: the dry SHA it runs, the one proposed,
whether the change is promoted, eligible, waiting for a merge or blocked, and what holds it
(the promoter's status.environments[].blocks), then the healthy dry SHAs an environment can be
reverted to with ` + "`kubectl sluice revert STRATEGY/BRANCH --to SHA`" + `.`,
		Example: `  kubectl sluice promote status webapp`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := c.namespace()
			if err != nil {
				return err
			}
			client, err := c.sluice()
			if err != nil {
				return err
			}
			ps, err := client.PromoterV1alpha1().PromotionStrategies(ns).Get(cmd.Context(), args[0], metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("PromotionStrategy %s/%s: %w", ns, args[0], err)
			}
			return c.printPromotion(ps)
		},
	}
}

func (c *cluster) printPromotion(ps *promoterv1alpha1.PromotionStrategy) error {
	if ready := conditions.Get(ps.Status.Conditions, conditions.Ready); ready != nil {
		fmt.Fprintf(c.out, "promotionstrategy/%s: %s (%s)\n", ps.Name, oneLine(ready.Message), ready.Reason)
	}
	if len(ps.Status.Environments) == 0 {
		fmt.Fprintf(c.out, "promotionstrategy/%s reports no environment yet: is the promoter-controller running?\n", ps.Name)
		return nil
	}
	w := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ENVIRONMENT\tACTIVE\tPROPOSED\tSTATE\tWHY")
	for _, env := range ps.Status.Environments {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", env.Branch, orDash(short(env.Active.DrySHA)), orDash(short(env.Proposed.DrySHA)), promotionState(env), orDash(why(env)))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, env := range ps.Status.Environments {
		var shas []string
		for _, h := range env.LastHealthyDrySHAs {
			if h.SHA != env.Active.DrySHA {
				shas = append(shas, short(h.SHA))
			}
		}
		if len(shas) > 0 {
			fmt.Fprintf(c.out, "%s can be reverted to: %s\n", env.Branch, strings.Join(shas, ", "))
		}
	}
	return nil
}

// promotionState says where an environment's change is.
func promotionState(env promoterv1alpha1.EnvironmentStatus) string {
	switch {
	case env.Proposed.DrySHA == "" || env.Proposed.DrySHA == env.Active.DrySHA:
		return "promoted"
	case len(env.Blocks) > 0 || env.Blocked != "":
		return "blocked"
	case env.Eligible && env.PullRequest != nil && env.PullRequest.State == promoterv1alpha1.PullRequestOpen:
		return "eligible, pull request open"
	case env.Eligible:
		return "eligible"
	}
	return "pending"
}

// why says what holds an environment's change, one rule after another.
func why(env promoterv1alpha1.EnvironmentStatus) string {
	if len(env.Blocks) == 0 {
		return oneLine(env.Blocked)
	}
	var out []string
	for _, b := range env.Blocks {
		out = append(out, fmt.Sprintf("%s (%s): %s", b.Rule, b.Environment, oneLine(b.Message)))
	}
	return strings.Join(out, "; ")
}
