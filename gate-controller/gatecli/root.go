// Package gatecli is `kubectl sluice gate` (and its deprecated alias `kubectl gate`): open, close and list Gates, and suspend or resume any object
// with a reason (RFC-0006), with kubectl's own connection flags.
package gatecli

import (
	goflag "flag"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	"github.com/sluicehq/sluice/pkg/version"
)

// The field managers that name the plugin's changes in managedFields, by the command run.
const (
	FieldManager      = "kubectl-sluice"
	AliasFieldManager = "kubectl-gate"
)

// options are shared by every command.
type options struct {
	flags *genericclioptions.ConfigFlags
	// command is how the person runs it, e.g. "kubectl sluice gate", for help and hints.
	command      string
	fieldManager string
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

func (o *options) restConfig() (*rest.Config, error) {
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultRequestTimeout
	}
	return cfg, nil
}

func (o *options) sluice() (sluice.Interface, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	return sluice.NewForConfig(cfg)
}

// hint is a command of this plugin to suggest, in the namespace the command ran in, so that
// pasting it acts on the same objects.
func (o *options) hint(ns, command string) string {
	return fmt.Sprintf("`%s %s -n %s`", o.command, command, ns)
}

// NewCommand returns the gate commands as `kubectl sluice gate` runs them.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newCommand(streams, "kubectl sluice gate", FieldManager)
}

// NewAliasCommand returns the same commands as the deprecated `kubectl gate` runs them: only
// the name in help and hints, and the field manager, differ.
func NewAliasCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newCommand(streams, "kubectl gate", AliasFieldManager)
}

func newCommand(streams genericiooptions.IOStreams, command, fieldManager string) *cobra.Command {
	o := &options{flags: genericclioptions.NewConfigFlags(true), command: command, fieldManager: fieldManager, IOStreams: streams}
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
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: command},
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
	nameExamples(root, command)
	return root
}

// nameExamples writes the help's examples with the command as it is run.
func nameExamples(cmd *cobra.Command, command string) {
	cmd.Example = strings.ReplaceAll(cmd.Example, "kubectl gate ", command+" ")
	cmd.Long = strings.ReplaceAll(cmd.Long, "`kubectl gate ", "`"+command+" ")
	for _, sub := range cmd.Commands() {
		nameExamples(sub, command)
	}
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
