package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	"github.com/sluicehq/sluice/gate-controller/gatecli"
	"github.com/sluicehq/sluice/pkg/version"
)

// fieldManager names the plugin's changes in managedFields, as the gate commands do.
const fieldManager = gatecli.FieldManager

// cluster holds kubectl's connection flags (--kubeconfig, --context, -n ...) of one command.
type cluster struct {
	flags *genericclioptions.ConfigFlags
	out   io.Writer
}

// defaultRequestTimeout bounds one request when --request-timeout is not given.
const defaultRequestTimeout = 30 * time.Second

func (c *cluster) namespace() (string, error) {
	ns, _, err := c.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("cannot tell the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

func (c *cluster) sluice() (sluice.Interface, error) {
	cfg, err := c.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultRequestTimeout
	}
	return sluice.NewForConfig(cfg)
}

// newRootCommand is `kubectl sluice` with its kubectl verbs: gate, revert, release and promote.
// (`ui` has flags of its own and runs apart.)
func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "sluice",
		Short:         "Sluice from kubectl",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl sluice"},
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%s", err) })
	c := &cluster{flags: genericclioptions.NewConfigFlags(true), out: stdout}
	c.flags.AddFlags(root.PersistentFlags())
	root.AddCommand(newRevertCommand(c), newReleaseCommand(c), newPromoteCommand(c))
	return root
}

// runCommand runs cmd with args and returns the exit code, having said what went wrong.
func runCommand(ctx context.Context, cmd *cobra.Command, args []string, stderr io.Writer) int {
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	var exitErr *gatecli.ExitError
	if err != nil && !(errors.As(err, &exitErr) && exitErr.Printed) {
		fmt.Fprintln(stderr, "error:", err)
	}
	return gatecli.ExitCode(err)
}

func usageError(format string, args ...any) error {
	return &gatecli.ExitError{Code: gatecli.ExitUsage, Err: fmt.Errorf(format, args...)}
}

// usageArgs turns cobra's argument errors into usage errors.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError("%s", err)
		}
		return nil
	}
}

// short is the first 7 characters of a SHA, as git shows it.
func short(sha string) string {
	return sha[:min(7, len(sha))]
}

// oneLine keeps a message on one table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
