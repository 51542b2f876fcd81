// Package demo tells the Sluice story on the embedded local control plane: it starts the
// control plane, runs the controller binaries as processes, and walks through each chapter as a
// readable timeline. `make demo` runs it, and the end-to-end test runs the same story.
package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/sluicehq/sluice/testenv"
)

// Story is the shared state of a demo run: the control plane, the running controllers, and the
// timeline writer.
type Story struct {
	Env       *testenv.Env
	Namespace string
	// Metrics maps each running controller, and the UI, to the address of its /metrics.
	Metrics map[string]string
	// StatusWebhook is the address of the commitstatus-controller's status webhook receiver.
	StatusWebhook string
	out           io.Writer
	// flux is the real Flux beside the control plane, from the chapter that starts it on.
	flux    *fluxBed
	logDir  string
	start   time.Time
	kubectl string
}

// Step prints a timeline entry.
func (s *Story) Step(format string, args ...any) {
	fmt.Fprintf(s.out, "\n[%6.1fs] ▸ %s\n", time.Since(s.start).Seconds(), fmt.Sprintf(format, args...))
}

// Chapter prints a chapter heading.
func (s *Story) Chapter(title string) {
	fmt.Fprintf(s.out, "\n══ %s %s\n", title, strings.Repeat("═", max(0, 70-len(title))))
}

// Say prints a line of narration under the current step.
func (s *Story) Say(format string, args ...any) {
	fmt.Fprintf(s.out, "           %s\n", fmt.Sprintf(format, args...))
}

// Kubectl runs kubectl against the control plane, prints the command and its output indented,
// and returns the output.
func (s *Story) Kubectl(ctx context.Context, args ...string) (string, error) {
	if s.Namespace != "" {
		args = append([]string{"--namespace", s.Namespace}, args...)
	}
	cmd := exec.CommandContext(ctx, s.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.Env.Kubeconfig)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	fmt.Fprintf(s.out, "           $ kubectl %s\n", strings.Join(args, " "))
	for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		fmt.Fprintf(s.out, "           %s\n", line)
	}
	if err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// Apply pipes a YAML manifest to `kubectl apply -f -`, printing the manifest first.
func (s *Story) Apply(ctx context.Context, manifest string) error {
	fmt.Fprintf(s.out, "           ┌ manifest\n")
	for _, line := range strings.Split(strings.TrimSpace(manifest), "\n") {
		fmt.Fprintf(s.out, "           │ %s\n", line)
	}
	return s.applyQuietly(ctx, manifest)
}

// applyQuietly is Apply without printing the manifest, for one the story has shown already in
// another form.
func (s *Story) applyQuietly(ctx context.Context, manifest string) error {
	args := []string{"--namespace", s.Namespace, "apply", "-f", "-"}
	cmd := exec.CommandContext(ctx, s.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.Env.Kubeconfig)
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	fmt.Fprintf(s.out, "           $ kubectl apply -f -\n")
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		fmt.Fprintf(s.out, "           %s\n", line)
	}
	if err != nil {
		return fmt.Errorf("kubectl apply: %w: %s", err, out)
	}
	return nil
}

// step is one step of a chapter.
type step func(context.Context) error

// runSteps runs a chapter's steps in order and stops at the first that fails.
func runSteps(ctx context.Context, steps ...step) error {
	for _, run := range steps {
		if err := run(ctx); err != nil {
			return err
		}
	}
	return nil
}
