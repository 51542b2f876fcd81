package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/testenv"
)

// Options configure a demo run.
type Options struct {
	// BinDir holds the controller binaries (`make build` puts them in bin/).
	BinDir string
	// Out receives the timeline.
	Out io.Writer
	// LogDir receives each controller's log file; empty uses a temporary folder.
	LogDir string
	// AfterStory, when set, runs after the last chapter while the controllers still run, with
	// the story's state (Story.Metrics gives each controller's /metrics address).
	AfterStory func(context.Context, *Story) error
	// ScreenshotDir, when set, receives a screenshot of the web UI at the end of each chapter.
	ScreenshotDir string
	// KeepRunning leaves the control plane, the controllers and the UI running after the story,
	// until ctx ends (Ctrl-C): make demo UI=1.
	KeepRunning bool
}

// chapters run in order; each controller adds its own.
var chapters = []struct {
	title string
	run   func(context.Context, *Story) error
	// page is the web UI's page that shows the chapter's outcome.
	page string
}{
	{"Chapter 1: the control plane and a first Gate", chapterFirstGate, "/gates"},
	{"Chapter 2: No Deploy Friday, a held Kustomization and a hotfix", chapterNoDeployFriday, "/gates"},
	{"Health: a rollout turns healthy, then fails, as commit statuses", chapterHealth, "/health"},
	{"Promotion: dev -> staging -> prod through branches, held by a Gate", chapterPromotion, "/pipelines"},
	{"Commit statuses: in the cluster with plain git, on the SCM with Gitea", chapterCommitStatuses, "/pipelines"},
	{"CI on the SCM: a Gitea check holds a promotion until it passes", chapterCI, "/pipelines"},
	{"Rollback: prod's health fails, the revert is merged in git, a fix forward promotes", chapterRollback, "/rollbacks"},
	{"Manifest release: v1, a failed test rolled back, v3", chapterRelease, "/rollbacks"},
}

// Run tells the whole story and stops every process it started, also when ctx is cancelled.
func Run(ctx context.Context, opts Options) (err error) {
	s := &Story{out: opts.Out, start: time.Now(), Namespace: "demo", Metrics: map[string]string{}}
	// Installing CRDs goes through envtest, which logs through controller-runtime: without a
	// logger that prints a stack trace about the missing logger into the timeline.
	crlog.SetLogger(logr.Discard())
	s.Chapter("Sluice demo")
	s.Step("starting the local control plane (kube-apiserver + etcd built from Go modules)")
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, env.Stop()) }()
	s.Env = env
	if s.kubectl, err = testenv.Tool("kubectl"); err != nil {
		return err
	}
	s.Say("kubeconfig: %s", env.Kubeconfig)
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}

	logDir := opts.LogDir
	if logDir == "" {
		if logDir, err = os.MkdirTemp("", "sluice-demo-logs-"); err != nil {
			return err
		}
	}
	s.logDir = logDir
	defer func() {
		if s.flux != nil {
			err = errors.Join(err, s.flux.stop())
		}
	}()
	s.Step("starting the controllers as processes (logs in %s)", logDir)
	procs, err := startControllers(ctx, opts.BinDir, env.Kubeconfig, logDir, s)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, procs.stop()) }()
	ui, uiURL, err := startUI(opts.BinDir, env.Kubeconfig, logDir, s)
	if ui != nil {
		procs = append(procs, ui)
	}
	if err != nil {
		return err
	}
	shots := newScreenshotter(opts.ScreenshotDir, uiURL, s)

	for _, ch := range chapters {
		s.Chapter(ch.title)
		if err := ch.run(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", ch.title, err)
		}
		shots.take(ctx, ch.page, s)
	}
	if shots != nil {
		s.Step("screenshots of the UI after each chapter are in %s", opts.ScreenshotDir)
	}
	if opts.AfterStory != nil {
		if err := opts.AfterStory(ctx, s); err != nil {
			return fmt.Errorf("after the story: %w", err)
		}
	}
	if opts.KeepRunning && uiURL != "" {
		s.Chapter("Still running")
		s.Step("the UI is at %s (kubeconfig %s); Ctrl-C stops everything", uiURL, env.Kubeconfig)
		<-ctx.Done()
	}
	s.Chapter("The end")
	s.Say("the story took %.0fs, the control plane's start included", time.Since(s.start).Seconds())
	s.Step("stopping the controllers and the control plane")
	return nil
}

// BinDirFromRepo returns <repo>/bin.
func BinDirFromRepo() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin"), nil
}
