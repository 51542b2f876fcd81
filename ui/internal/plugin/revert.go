package plugin

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/actions"
)

func newRevertCommand(c *cluster) *cobra.Command {
	var to, reason string
	cmd := &cobra.Command{
		Use:   "revert STRATEGY/BRANCH --to SHA",
		Short: "Take an environment back to a dry SHA it ran healthy, with a RevertCommit",
		Long: `Create a RevertCommit, as the UI's "Revert environment" does: the rollback-controller writes a
commit that takes the environment back to the dry SHA and merges its pull request, and the
promoter holds newer changes there until someone promotes past them.

The environment is named as the UI names it: its PromotionStrategy, a slash, and its branch
(webapp/environment/production). SHA is one of the environment's healthy dry SHAs other than
the one it runs (` + "`kubectl sluice promote status STRATEGY`" + ` lists them); a unique prefix of 7
characters or more is enough.

Exit codes: 0 created, 1 not created (not found, forbidden, no such SHA), 2 wrong command line.`,
		Example: `  kubectl sluice revert webapp/environment/production --to 3f2a9c1 -m "checkout errors since 14:02"`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			strategy, branch, ok := strings.Cut(args[0], "/")
			if !ok || strategy == "" || branch == "" {
				return usageError("name the environment as STRATEGY/BRANCH, e.g. webapp/environment/production, not %q", args[0])
			}
			if len(strings.TrimSpace(to)) < 7 {
				return usageError("--to is required: the dry SHA to go back to, at least 7 characters")
			}
			ns, err := c.namespace()
			if err != nil {
				return err
			}
			client, err := c.sluice()
			if err != nil {
				return err
			}
			ps, err := client.PromoterV1alpha1().PromotionStrategies(ns).Get(cmd.Context(), strategy, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("PromotionStrategy %s/%s: %w", ns, strategy, err)
			}
			r := actions.Revert{Strategy: strategy, Branch: branch, SHA: resolveSHA(ps, branch, strings.TrimSpace(to)), Reason: reason}
			if err := actions.CheckRevert(ps, r); err != nil {
				return err
			}
			rc, err := actions.CreateRevert(cmd.Context(), client.RollbackV1alpha1().RevertCommits(ns), r, fieldManager)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.out, "revertcommit/%s created: environment %s of %s goes back to dry commit %s; follow it with `kubectl get revertcommit %s -n %s -w`\n",
				rc.Name, branch, strategy, r.SHA, rc.Name, ns)
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the dry SHA to go back to: one the environment ran healthy")
	cmd.Flags().StringVarP(&reason, "message", "m", "", "why; it goes into the revert commit, its pull request and the Events")
	return cmd
}

// resolveSHA is the healthy dry SHA of the environment that prefix names alone, or prefix.
func resolveSHA(ps *promoterv1alpha1.PromotionStrategy, branch, prefix string) string {
	targets, _ := actions.RevertTargets(ps, branch)
	match := ""
	for _, t := range targets {
		if strings.HasPrefix(t.SHA, prefix) {
			if match != "" {
				return prefix
			}
			match = t.SHA
		}
	}
	if match == "" {
		return prefix
	}
	return match
}
