package plugin

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rollbackclient "github.com/sluicehq/sluice/api/generated/clientset/versioned/typed/rollback/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/actions"
)

func newReleaseCommand(c *cluster) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "release",
		Short: "Show a ManifestRelease's snapshots, or roll it back to one",
		Args:  usageArgs(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return usageError("name a command: rollback or history") },
	}
	cmd.AddCommand(newReleaseRollbackCommand(c), newReleaseHistoryCommand(c))
	return cmd
}

func newReleaseRollbackCommand(c *cluster) *cobra.Command {
	var to int64
	cmd := &cobra.Command{
		Use:   "rollback NAME --to N",
		Short: "Roll a ManifestRelease back to a kept snapshot",
		Long: `Set the annotation ` + rollbackv1alpha1.RollbackToAnnotation + `=N, as the UI's "Roll back release" does: the
rollback-controller applies snapshot N once, and records it in the release's history. N is one
of the snapshot numbers ` + "`kubectl sluice release history NAME`" + ` lists, other than the deployed one.

Exit codes: 0 requested, 1 not requested (not found, forbidden, no such snapshot), 2 wrong command line.`,
		Example: `  kubectl sluice release rollback shop --to 3`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to <= 0 {
				return usageError("--to is required: the snapshot number to roll back to (see `kubectl sluice release history %s`)", args[0])
			}
			ns, releases, err := c.releases()
			if err != nil {
				return err
			}
			mr, err := releases.Get(cmd.Context(), args[0], metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("ManifestRelease %s/%s: %w", ns, args[0], err)
			}
			if err := actions.CheckRollback(mr, to); err != nil {
				return err
			}
			if _, err := actions.RollBack(cmd.Context(), releases, mr.Name, to, fieldManager); err != nil {
				return err
			}
			fmt.Fprintf(c.out, "manifestrelease/%s rolls back to snapshot %d; follow it with `kubectl sluice release history %s -n %s`\n", mr.Name, to, mr.Name, ns)
			return nil
		},
	}
	cmd.Flags().Int64Var(&to, "to", 0, "the snapshot number to roll back to")
	return cmd
}

func newReleaseHistoryCommand(c *cluster) *cobra.Command {
	return &cobra.Command{
		Use:     "history NAME",
		Short:   "List a ManifestRelease's snapshots: numbers, versions, times and outcomes",
		Example: `  kubectl sluice release history shop`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, releases, err := c.releases()
			if err != nil {
				return err
			}
			mr, err := releases.Get(cmd.Context(), args[0], metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("ManifestRelease %s/%s: %w", ns, args[0], err)
			}
			if len(mr.Status.History) == 0 {
				fmt.Fprintf(c.out, "manifestrelease/%s has applied nothing yet\n", mr.Name)
				return nil
			}
			w := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SNAPSHOT\tVERSION\tACTION\tAPPLIED\tTEST\tOUTCOME\tMESSAGE")
			for _, h := range mr.Status.History {
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Number, h.Version, h.Action,
					h.Time.UTC().Format(time.RFC3339), orDash(string(h.Test)), outcome(mr, h), oneLine(h.Message))
			}
			return w.Flush()
		},
	}
}

// releases is the namespace and the ManifestReleases in it.
func (c *cluster) releases() (string, rollbackclient.ManifestReleaseInterface, error) {
	ns, err := c.namespace()
	if err != nil {
		return "", nil, err
	}
	client, err := c.sluice()
	if err != nil {
		return "", nil, err
	}
	return ns, client.RollbackV1alpha1().ManifestReleases(ns), nil
}

// outcome says what became of a snapshot: deployed now, rolled back, or replaced.
func outcome(mr *rollbackv1alpha1.ManifestRelease, h rollbackv1alpha1.ReleaseHistoryEntry) string {
	switch {
	case h.Number == mr.Status.UpgradeNumber:
		return "deployed"
	case h.RolledBack:
		return "rolled back"
	}
	return "replaced"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
