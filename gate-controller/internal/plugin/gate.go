package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/wait"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
)

func newOpenCloseCommand(o *options, open bool) *cobra.Command {
	verb, state := "close", gatingv1alpha1.StateClosed
	if open {
		verb, state = "open", gatingv1alpha1.StateOpen
	}
	var (
		forDuration time.Duration
		message     string
		waitFor     time.Duration
	)
	cmd := &cobra.Command{
		Use:   verb + " NAME",
		Short: fmt.Sprintf("%s a gate by hand, or with --for until a time", strings.ToUpper(verb[:1])+verb[1:]),
		Long: fmt.Sprintf(`Without --for, %[1]s the gate by hand: set spec.closed to %[2]t and remove any override.
With --for, set an override that %[1]ss the gate until then, whatever its windows say; when it
expires the gate follows spec.closed and its windows again. A gate closed by hand
(spec.closed: true) stays closed whatever an override says.

The command then waits for the gate-controller to evaluate the change and prints the state.`, verb, !open),
		Example: fmt.Sprintf("  kubectl gate %[1]s prod -m \"reason\"\n  kubectl gate %[1]s prod --for 2h -m \"reason\"", verb),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("for") && forDuration <= 0 {
				return fmt.Errorf("--for must be a positive duration such as 2h or 90m, got %s", forDuration)
			}
			ns, err := o.namespace()
			if err != nil {
				return err
			}
			client, err := o.sluice()
			if err != nil {
				return err
			}
			gates := client.GatingV1alpha1().Gates(ns)
			ctx := cmd.Context()
			var patch map[string]any
			if forDuration > 0 {
				g, err := gates.Get(ctx, args[0], metav1.GetOptions{})
				if err != nil {
					return describeGetError(err, ns, args[0])
				}
				if open && g.Spec.Closed {
					return fmt.Errorf("gate %s/%s is closed by hand (spec.closed: true), which beats any override; open it with `kubectl gate open %s` instead", ns, args[0], args[0])
				}
				until := time.Now().Add(forDuration).UTC().Truncate(time.Second)
				// A merge patch merges into an existing override: name every field, so none is left over.
				patch = map[string]any{"spec": map[string]any{"override": map[string]any{
					"state": state, "until": until.Format(time.RFC3339), "message": nullIfEmpty(message),
				}}}
			} else {
				patch = map[string]any{"spec": map[string]any{"closed": !open, "message": nullIfEmpty(message), "override": nil}}
			}
			data, err := json.Marshal(patch)
			if err != nil {
				return err
			}
			g, err := gates.Patch(ctx, args[0], types.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager})
			if err != nil {
				return describeGetError(err, ns, args[0])
			}
			return reportState(ctx, o.Out, client, g, waitFor)
		},
	}
	cmd.Flags().DurationVar(&forDuration, "for", 0, "set an override for this long instead of changing the gate by hand, e.g. 2h")
	cmd.Flags().StringVarP(&message, "message", "m", "", "why, shown in the gate's status and on the objects it holds")
	cmd.Flags().DurationVar(&waitFor, "wait", 10*time.Second, "how long to wait for the gate-controller to evaluate the change; 0 does not wait")
	return cmd
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func describeGetError(err error, ns, name string) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("gate %s/%s not found; list gates with `kubectl gate list -A`", ns, name)
	}
	return err
}

// reportState waits until the gate-controller has evaluated generation of g, then prints the state.
func reportState(ctx context.Context, out io.Writer, client sluice.Interface, g *gatingv1alpha1.Gate, timeout time.Duration) error {
	generation := g.Generation
	evaluated := func(g *gatingv1alpha1.Gate) bool { return g.Status.ObservedGeneration >= generation }
	if !evaluated(g) && timeout > 0 {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			latest, err := client.GatingV1alpha1().Gates(g.Namespace).Get(ctx, g.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			g = latest
			return evaluated(g), nil
		})
		if err != nil && !wait.Interrupted(err) {
			return err
		}
	}
	if !evaluated(g) {
		fmt.Fprintf(out, "gate/%s updated; the gate-controller has not evaluated it yet (is it running?)\n", g.Name)
		return nil
	}
	fmt.Fprintf(out, "gate/%s %s (%s): %s\n", g.Name, stateName(g), g.Status.Reason, g.Status.Message)
	return nil
}

func stateName(g *gatingv1alpha1.Gate) string {
	if meta.FindStatusCondition(g.Status.Conditions, gatingv1alpha1.ConditionOpen) == nil {
		return "not evaluated"
	}
	if g.Status.Open {
		return "open"
	}
	return "closed"
}

func newListCommand(o *options) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List gates with their state, reason, next change and how many objects they hold",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns := metav1.NamespaceAll
			if !all {
				var err error
				if ns, err = o.namespace(); err != nil {
					return err
				}
			}
			client, err := o.sluice()
			if err != nil {
				return err
			}
			list, err := client.GatingV1alpha1().Gates(ns).List(cmd.Context(), metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(list.Items) == 0 {
				fmt.Fprintln(o.Out, "No gates found.")
				return nil
			}
			printGates(o.Out, list.Items, all, time.Now())
			return nil
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list gates in every namespace")
	return cmd
}

func printGates(out io.Writer, gates []gatingv1alpha1.Gate, withNamespace bool, now time.Time) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if withNamespace {
		fmt.Fprint(w, "NAMESPACE\t")
	}
	fmt.Fprintln(w, "NAME\tSTATE\tREASON\tNEXT CHANGE\tHOLDING\tMESSAGE")
	for _, g := range gates {
		if withNamespace {
			fmt.Fprintf(w, "%s\t", g.Namespace)
		}
		next := "-"
		if t := g.Status.NextTransitionTime; t != nil {
			next = fmt.Sprintf("in %s (%s)", duration.HumanDuration(t.Sub(now)), t.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\n", g.Name, stateName(&g), orDash(g.Status.Reason), next, g.Status.Holding, orDash(g.Status.Message))
	}
	_ = w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
