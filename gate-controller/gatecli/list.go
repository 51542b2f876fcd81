package gatecli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
)

func newListCommand(o *options) *cobra.Command {
	var (
		selector string
		output   string
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List gates with their state, reason, next change and how many objects they hold",
		Example: "  kubectl gate list -A\n  kubectl gate list -o wide\n  kubectl gate list -l team=payments -o yaml",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(listOutputs, output) {
				return usageError("-o %q is not supported; use wide, name, yaml or json, or leave it out for a table", output)
			}
			ns := metav1.NamespaceAll
			if !o.allNamespaces {
				var err error
				if ns, err = o.namespace(); err != nil {
					return err
				}
			}
			client, err := o.sluice()
			if err != nil {
				return err
			}
			list, err := client.GatingV1alpha1().Gates(ns).List(cmd.Context(), metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return err
			}
			return printList(o.Out, list, output, o.allNamespaces, time.Now())
		},
	}
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "list only the gates matching this label selector")
	cmd.Flags().StringVarP(&output, "output", "o", "", "wide (more columns, whole messages), name, yaml or json instead of the table")
	return cmd
}

// listOutputs are the -o values of list; "" is the table.
var listOutputs = []string{"", "wide", "name", "yaml", "json"}

func printList(out io.Writer, list *gatingv1alpha1.GateList, output string, withNamespace bool, now time.Time) error {
	switch output {
	case "yaml", "json":
		// The API server leaves the kinds out of a typed list's items; printers need them.
		list.SetGroupVersionKind(gatingv1alpha1.SchemeGroupVersion.WithKind("GateList"))
		for i := range list.Items {
			list.Items[i].SetGroupVersionKind(gatingv1alpha1.SchemeGroupVersion.WithKind("Gate"))
		}
		var p printers.ResourcePrinter = &printers.YAMLPrinter{}
		if output == "json" {
			p = &printers.JSONPrinter{}
		}
		return p.PrintObj(list, out)
	case "name":
		// As kubectl prints it, so the output pipes into kubectl.
		for _, g := range list.Items {
			fmt.Fprintf(out, "gate.%s/%s\n", gatingv1alpha1.SchemeGroupVersion.Group, g.Name)
		}
		return nil
	}
	if len(list.Items) == 0 {
		fmt.Fprintln(out, "No gates found.")
		return nil
	}
	printGates(out, list.Items, withNamespace, output == "wide", now)
	return nil
}

// MaxMessageColumn caps the MESSAGE column of the table, as kubectl caps long cells, so one long
// message does not push every row off the screen; -o wide prints whole messages.
const MaxMessageColumn = 64

func printGates(out io.Writer, gates []gatingv1alpha1.Gate, withNamespace, wide bool, now time.Time) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if withNamespace {
		fmt.Fprint(w, "NAMESPACE\t")
	}
	fmt.Fprint(w, "NAME\tSTATE\tREASON\tNEXT CHANGE\tHOLDING\t")
	if wide {
		fmt.Fprint(w, "LAST CHANGE\tWINDOWS\tOVERRIDE UNTIL\tAPPROVED\t")
	}
	fmt.Fprintln(w, "MESSAGE")
	for _, g := range gates {
		if withNamespace {
			fmt.Fprintf(w, "%s\t", g.Namespace)
		}
		next := "-"
		if t := g.Status.NextTransitionTime; t != nil {
			next = fmt.Sprintf("in %s (%s)", duration.HumanDuration(t.Sub(now)), t.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t", g.Name, stateName(&g), orDash(g.Status.Reason), next, g.Status.Holding)
		message := oneLine(g.Status.Message)
		if wide {
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\t", ago(g.Status.LastTransitionTime, now), len(g.Spec.Windows), overrideUntil(g.Spec.Override), orDash(g.Status.Approved))
		} else {
			message = capWidth(message, MaxMessageColumn)
		}
		fmt.Fprintf(w, "%s\n", orDash(message))
	}
	_ = w.Flush()
}

// oneLine keeps a message on its row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// capWidth cuts s to at most n runes, marking the cut.
func capWidth(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}

func ago(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t.Time)) + " ago"
}

func overrideUntil(o *gatingv1alpha1.GateOverride) string {
	if o == nil {
		return "-"
	}
	return fmt.Sprintf("%s until %s", o.State, o.Until.UTC().Format(time.RFC3339))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
