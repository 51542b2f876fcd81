package gatecli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	gatingclient "github.com/sluicehq/sluice/api/generated/clientset/versioned/typed/gating/v1alpha1"
	"github.com/sluicehq/sluice/pkg/actions"
	"github.com/sluicehq/sluice/pkg/gate"
)

// approval holds the flags of approve.
type approval struct {
	revision    string
	forDuration time.Duration
	message     string
	wait        time.Duration
	all         bool
	selector    string
}

func newApproveCommand(o *options) *cobra.Command {
	f := &approval{}
	cmd := &cobra.Command{
		Use:   "approve (NAME... | --all | -l SELECTOR) --revision REV",
		Short: "Let one revision through closed gates, and nothing after it",
		Long: `Add REV to the gate's spec.approvals, with who approves (the user the API server knows you
by) and when. While the gate is closed, an object it holds is released while its Flux source is
at an approved revision, and held again when the source moves to one nobody approved; a
promotion through an environment the gate guards goes ahead only for an approved dry SHA.

REV is a Flux source or artifact revision ("main@sha1:<sha>"), an OCI digest ("sha256:<digest>"),
a full Git commit SHA such as a promotion's dry SHA, or a chart version ("6.0.1"). A digest or
SHA matches the same commit or artifact on any branch or tag; short SHAs are refused.

With --for, the approval expires after that long. Approving a revision again replaces its approval.

The command then waits (--wait) for the gate-controller to report the approval. If it does not
within --wait, the approval is still applied: the command says so and exits 3.

` + exitCodesHelp,
		Example: `  kubectl gate approve prod --revision main@sha1:0c8f1f6c2b1e4d0e9a7b3c5d6e8f9a0b1c2d3e4f -m "CVE-2025-1234 fix"
  kubectl gate approve prod --revision sha256:<digest> --for 24h`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(f.revision) == "" {
				return usageError("--revision is required: the revision to let through, e.g. main@sha1:<sha>")
			}
			if cmd.Flags().Changed("for") && f.forDuration <= 0 {
				return usageError("--for must be a positive duration such as 24h, got %s", f.forDuration)
			}
			return o.approve(cmd.Context(), f, args)
		},
	}
	cmd.Flags().StringVar(&f.revision, "revision", "", "the revision to let through: main@sha1:<sha>, sha256:<digest>, a full commit SHA or a chart version")
	cmd.Flags().DurationVar(&f.forDuration, "for", 0, "let it through for this long only, e.g. 24h; without it the approval stays until removed")
	cmd.Flags().StringVarP(&f.message, "message", "m", "", "why, shown in the gate's status")
	cmd.Flags().DurationVar(&f.wait, "wait", 10*time.Second, "how long to wait for the gate-controller to report the approval; 0 does not wait")
	addSelection(cmd.Flags(), &f.all, &f.selector, "gate", "gates")
	return cmd
}

func (o *options) approve(ctx context.Context, f *approval, names []string) error {
	client, err := o.sluice()
	if err != nil {
		return err
	}
	refs, err := o.selectGates(ctx, client.GatingV1alpha1(), names, f.all, f.selector)
	if err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Second)
	a := gatingv1alpha1.GateApproval{Revision: strings.TrimSpace(f.revision), By: o.user(ctx), At: &metav1.Time{Time: now}, Message: f.message}
	if f.forDuration > 0 {
		a.Until = &metav1.Time{Time: now.Add(f.forDuration)}
	}
	var t tally
	for _, ref := range refs {
		t.total++
		gates := client.GatingV1alpha1().Gates(ref.Namespace)
		g, err := actions.Approve(ctx, gates, ref.Name, a, now, o.fieldManager)
		if err != nil {
			fmt.Fprintf(o.ErrOut, "error: %s\n", o.describeGateError(err, ref.Namespace, ref.Name))
			t.failed++
			continue
		}
		if !o.confirmApproval(ctx, gates, g, a, f.wait) {
			t.unconfirmed++
		}
	}
	return t.err()
}

// user is who the API server knows the caller as, from a SelfSubjectReview; if the server
// cannot say, the kubeconfig's user name; empty if neither is known.
func (o *options) user(ctx context.Context) string {
	if cfg, err := o.flags.ToRESTConfig(); err == nil {
		if kube, err := kubernetes.NewForConfig(cfg); err == nil {
			review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err == nil && review.Status.UserInfo.Username != "" {
				return review.Status.UserInfo.Username
			}
		}
	}
	raw, err := o.flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return ""
	}
	current := raw.CurrentContext
	if o.flags.Context != nil && *o.flags.Context != "" {
		current = *o.flags.Context
	}
	if c, ok := raw.Contexts[current]; ok {
		return c.AuthInfo
	}
	return ""
}

// confirmApproval waits until the gate-controller has evaluated the gate with the approval,
// then says what it lets through. It reports false, having said why, when it has not yet.
func (o *options) confirmApproval(ctx context.Context, gates gatingclient.GateInterface, g *gatingv1alpha1.Gate, a gatingv1alpha1.GateApproval, timeout time.Duration) bool {
	generation := g.Generation
	if timeout == 0 {
		fmt.Fprintf(o.Out, "%s approves %s; not waiting for the gate-controller (--wait 0)\n", o.gateName(g), a.Revision)
		return true
	}
	_, lastErr := poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		latest, err := gates.Get(ctx, g.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		g = latest
		return g.Status.ObservedGeneration >= generation, nil
	})
	if g.Status.ObservedGeneration < generation {
		why := "is it running?"
		if lastErr != nil {
			why = "last error: " + lastErr.Error()
		}
		fmt.Fprintf(o.Out, "%s approves %s, but not yet confirmed: the gate-controller has not evaluated it within %s (%s); check with %s\n",
			o.gateName(g), a.Revision, timeout, why, o.hint(g.Namespace, "list"))
		return false
	}
	who := ""
	if a.By != "" {
		who = " (approved by " + a.By + ")"
	}
	until := ""
	if a.Until != nil {
		until = " until " + a.Until.UTC().Format(time.RFC3339)
	}
	if g.Status.Open {
		fmt.Fprintf(o.Out, "%s approves %s%s%s; the gate is open, so it lets everything through until it closes\n", o.gateName(g), a.Revision, who, until)
		return true
	}
	fmt.Fprintf(o.Out, "%s approves %s%s%s; the gate is %s (%s): %s; it lets through %s\n",
		o.gateName(g), a.Revision, who, until, stateName(g), g.Status.Reason, g.Status.Message, gate.SummarizeApprovals(g.Status.Approvals))
	return true
}
