// Package plugin is kubectl-gate: open, close and list Gates, and suspend or resume any object
// with a reason (RFC-0006), with kubectl's own connection flags.
package plugin

import (
	goflag "flag"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	"github.com/sluicehq/sluice/pkg/version"
)

// FieldManager names the plugin's changes in managedFields.
const FieldManager = "kubectl-gate"

// options are shared by every command.
type options struct {
	flags *genericclioptions.ConfigFlags
	// allNamespaces is -A: select across every namespace, as kubectl does.
	allNamespaces bool
	genericiooptions.IOStreams
}

func (o *options) namespace() (string, error) {
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("cannot tell the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

// defaultRequestTimeout bounds one request when --request-timeout is not given, so a command
// that waits for the controller cannot hang on an API server that stopped answering.
const defaultRequestTimeout = 30 * time.Second

func (o *options) sluice() (sluice.Interface, error) {
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultRequestTimeout
	}
	return sluice.NewForConfig(cfg)
}

// hint is a kubectl gate command to suggest, in the namespace the command ran in, so that
// pasting it acts on the same objects.
func hint(ns, command string) string {
	return fmt.Sprintf("`kubectl gate %s -n %s`", command, ns)
}

// NewCommand returns the kubectl-gate command; kubectl runs it as `kubectl gate`.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{flags: genericclioptions.NewConfigFlags(true), IOStreams: streams}
	root := &cobra.Command{
		Use:   "gate",
		Short: "Open, close, approve revisions through and list Sluice Gates; suspend or resume any object with a reason",
		Long: `Open, close and list Sluice Gates, and suspend or resume any object with a reason.

A closed gate holds every object that references it through the gating.sluice.dev/gates
annotation; the gate-controller suspends them and resumes them when the gate opens.

` + exitCodesHelp,
		Example: `  kubectl gate list -A -o wide
  kubectl gate close prod -m "release 1.4 sign-off pending"
  kubectl gate close -A -l tier=prod -m "incident INC-123"
  kubectl gate open prod --for 1h -m "hotfix for INC-123"   # then closed by hand again
  kubectl gate approve prod --revision main@sha1:<sha> -m "signed off"   # that revision only
  kubectl gate suspend kustomization/apps -m "migrating the database, ask #platform"
  kubectl gate resume kustomization/apps --wait`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl gate"},
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version: the release workflow stamps pkg/version as it does for the controllers.
		Version: version.Get().String(),
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &ExitError{Code: ExitUsage, Err: err} })
	o.flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false,
		"list or select across every namespace; with open, close, approve, suspend and resume, select with --all or -l")
	addVerbosity(root.PersistentFlags())
	root.AddCommand(newOpenCloseCommand(o, true), newOpenCloseCommand(o, false), newListCommand(o),
		newSuspendCommand(o), newResumeCommand(o), newApproveCommand(o))
	return root
}

// addVerbosity adds kubectl's -v: the client's log level, so -v=6 shows each request as with kubectl.
func addVerbosity(fs *pflag.FlagSet) {
	klogFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(klogFlags)
	v := pflag.PFlagFromGoFlag(klogFlags.Lookup("v"))
	v.Shorthand = "v"
	fs.AddFlag(v)
}

// addSelection adds --all and -l to a command that acts on several objects.
func addSelection(fs *pflag.FlagSet, all *bool, selector *string, one, many string) {
	fs.BoolVar(all, "all", false, "act on every "+one+" in the namespace")
	fs.StringVarP(selector, "selector", "l", "", "act on the "+many+" matching this label selector, e.g. team=payments")
}
