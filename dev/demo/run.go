package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
}

// chapters run in order; each controller adds its own.
var chapters = []struct {
	title string
	run   func(context.Context, *Story) error
}{
	{"Chapter 1: the control plane and a first Gate", chapterFirstGate},
	{"Chapter 2: No Deploy Friday, a held Kustomization and a hotfix", chapterNoDeployFriday},
	{"Health: a rollout turns healthy, then fails, as commit statuses", chapterHealth},
	{"Promotion: dev -> staging -> prod through branches, held by a Gate", chapterPromotion},
	{"Commit statuses: in the cluster with plain git, on the SCM with Gitea", chapterCommitStatuses},
	{"Rollback: prod's health fails, the revert is merged in git, a fix forward promotes", chapterRollback},
	{"Manifest release: v1, a failed test rolled back, v3", chapterRelease},
}

// Run tells the whole story and stops every process it started, also when ctx is cancelled.
func Run(ctx context.Context, opts Options) (err error) {
	s := &Story{out: opts.Out, start: time.Now(), Namespace: "demo", Metrics: map[string]string{}}
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
	s.Step("starting the controllers as processes (logs in %s)", logDir)
	procs, err := startControllers(ctx, opts.BinDir, env.Kubeconfig, logDir, s)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, procs.stop()) }()

	for _, ch := range chapters {
		s.Chapter(ch.title)
		if err := ch.run(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", ch.title, err)
		}
	}
	if opts.AfterStory != nil {
		if err := opts.AfterStory(ctx, s); err != nil {
			return fmt.Errorf("after the story: %w", err)
		}
	}
	s.Chapter("The end")
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
