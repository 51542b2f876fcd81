package plugin

import (
	"fmt"
	"io"
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
		all      bool
		selector string
		output   string
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List gates with their state, reason, next change and how many objects they hold",
		Example: "  kubectl gate list -A\n  kubectl gate list -l team=payments -o yaml",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "yaml" && output != "json" {
				return usageError("-o %q is not supported; use yaml or json, or leave it out for a table", output)
			}
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
			list, err := client.GatingV1alpha1().Gates(ns).List(cmd.Context(), metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return err
			}
			return printList(o.Out, list, output, all, time.Now())
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list gates in every namespace")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "list only the gates matching this label selector")
	cmd.Flags().StringVarP(&output, "output", "o", "", "yaml or json instead of a table")
	return cmd
}

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
	}
	if len(list.Items) == 0 {
		fmt.Fprintln(out, "No gates found.")
		return nil
	}
	printGates(out, list.Items, withNamespace, now)
	return nil
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
