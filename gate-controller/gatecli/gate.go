package gatecli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingclient "github.com/sluicehq/sluice/api/generated/clientset/versioned/typed/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/actions"
	"github.com/sluicehq/sluice/pkg/gate"
)

// openClose holds the flags of open and close.
type openClose struct {
	open        bool
	forDuration time.Duration
	message     string
	wait        time.Duration
	all         bool
	selector    string
}

func newOpenCloseCommand(o *options, open bool) *cobra.Command {
	f := &openClose{open: open}
	verb := f.verb()
	cmd := &cobra.Command{
		Use:   verb + " (NAME... | --all | -l SELECTOR)",
		Short: fmt.Sprintf("%s gates by hand, or with --for until a time", strings.ToUpper(verb[:1])+verb[1:]),
		Long: fmt.Sprintf(`Without --for, %[1]s the gate by hand: set spec.closed to %[2]t and remove any override.

With --for, set an override that %[1]ss the gate until then, whatever its windows say. The
override records what it replaces, and when it expires the gate returns to it: a gate closed by
hand is closed by hand again, and an earlier override that has not expired applies again. So
`+"`kubectl gate open prod --for 1h`"+` on a gate closed by hand opens it for an hour only.

The command then waits (--wait) for the gate-controller to evaluate the change and prints the
state. If it does not within --wait, the change is still applied: the command says so and exits 3.

`+exitCodesHelp, verb, !open),
		Example: fmt.Sprintf("  kubectl gate %[1]s prod -m \"reason\"\n  kubectl gate %[1]s prod --for 2h -m \"reason\"\n  kubectl gate %[1]s -l team=payments -m \"reason\"", verb),
		Args:    usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("for") && f.forDuration <= 0 {
				return usageError("--for must be a positive duration such as 2h or 90m, got %s", f.forDuration)
			}
			if f.open && f.forDuration == 0 && f.message != "" {
				return usageError("an open gate shows no message: spec.message says why a gate is closed by hand; " +
					"to say why it opens, open it for a while with --for D -m, or approve one revision with `kubectl gate approve NAME --revision REV -m`")
			}
			return o.openClose(cmd.Context(), f, args)
		},
	}
	cmd.Flags().DurationVar(&f.forDuration, "for", 0, "set an override for this long instead of changing the gate by hand, e.g. 2h; when it ends the gate is back as it was")
	cmd.Flags().StringVarP(&f.message, "message", "m", "", "why, shown in the gate's status and on the objects it holds")
	cmd.Flags().DurationVar(&f.wait, "wait", 10*time.Second, "how long to wait for the gate-controller to evaluate the change; 0 does not wait")
	addSelection(cmd.Flags(), &f.all, &f.selector, "gate", "gates")
	return cmd
}

func (f *openClose) verb() string {
	if f.open {
		return "open"
	}
	return "close"
}

func (o *options) openClose(ctx context.Context, f *openClose, names []string) error {
	client, err := o.sluice()
	if err != nil {
		return err
	}
	refs, err := o.selectGates(ctx, client.GatingV1alpha1(), names, f.all, f.selector)
	if err != nil {
		return err
	}
	var t tally
	for _, ref := range refs {
		t.total++
		gates := client.GatingV1alpha1().Gates(ref.Namespace)
		change := actions.GateChange{Open: f.open, For: f.forDuration, Message: f.message}
		g, err := actions.SetGate(ctx, gates, ref.Name, change, time.Now(), o.fieldManager)
		if err != nil {
			fmt.Fprintf(o.ErrOut, "error: %s\n", o.describeGateError(err, ref.Namespace, ref.Name))
			t.failed++
			continue
		}
		if !o.confirm(ctx, gates, g, f.wait) {
			t.unconfirmed++
		}
	}
	return t.err()
}

// selectGates is the named gates in the current namespace, or the gates --all or -l select in
// it, or with -A in every namespace.
func (o *options) selectGates(ctx context.Context, client gatingclient.GatingV1alpha1Interface, names []string, all bool, selector string) ([]gate.Ref, error) {
	switch {
	case (all || selector != "") && len(names) > 0:
		return nil, usageError("name gates or select them with --all or -l, not both")
	case all && selector != "":
		return nil, usageError("--all and -l cannot be used together")
	case o.allNamespaces && len(names) > 0:
		return nil, usageError("a name means a gate in one namespace: leave out -A, or select gates in every namespace with -A and --all or -l")
	case len(names) == 0 && !all && selector == "":
		return nil, usageError("name at least one gate, or select them with --all or -l")
	}
	ns := metav1.NamespaceAll
	if !o.allNamespaces {
		var err error
		if ns, err = o.namespace(); err != nil {
			return nil, err
		}
	}
	var refs []gate.Ref
	if len(names) > 0 {
		for _, name := range names {
			refs = append(refs, gate.Ref{Namespace: ns, Name: name})
		}
		return refs, nil
	}
	list, err := client.Gates(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, &ExitError{Code: ExitFailed, Err: fmt.Errorf("no gates selected")}
	}
	for _, g := range list.Items {
		refs = append(refs, gate.Ref{Namespace: g.Namespace, Name: g.Name})
	}
	return refs, nil
}

func (o *options) describeGateError(err error, ns, name string) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("gate %s/%s not found; list gates with %s", ns, name, o.hint(ns, "list"))
	}
	return err
}
