package demo

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/testenv/flux"
)

// fluxTimeout bounds a wait for the real Flux controllers: a fetch and an apply take well under
// a second on an idle machine, far longer on a loaded one.
const fluxTimeout = 2 * time.Minute

// fluxBed is what the demo runs beside the local control plane so that Flux deploys for real:
// source-controller and kustomize-controller as processes, and a folder of bare repositories
// served over smart HTTP on loopback by git http-backend (source-controller clones shallow, which
// git's own server answers).
type fluxBed struct {
	controllers *flux.Controllers
	gitRoot     string
	gitBase     string
	stopGit     func()
	cacheDir    string
	cache       *git.Cache
}

// startFlux installs the Flux CRDs and starts the real controllers, watching every namespace,
// with their logs and artifacts in logDir.
func (s *Story) startFlux(ctx context.Context, logDir string) error {
	paths, err := flux.CRDPaths()
	if err != nil {
		return err
	}
	if err := s.Env.InstallCRDPaths(paths...); err != nil {
		return err
	}
	bed := &fluxBed{}
	s.flux = bed
	if bed.gitRoot, err = os.MkdirTemp("", "sluice-demo-git-"); err != nil {
		return err
	}
	url, stop, err := gittest.ServeWithGit(filepath.Join(bed.gitRoot, "any.git"))
	if err != nil {
		return err
	}
	bed.gitBase, bed.stopGit = strings.TrimSuffix(url, "/any.git"), stop
	if bed.cacheDir, err = os.MkdirTemp("", "sluice-demo-clones-"); err != nil {
		return err
	}
	if bed.cache, err = git.NewCache(bed.cacheDir, nil); err != nil {
		return err
	}
	dir := filepath.Join(logDir, "flux")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	started := time.Now()
	bed.controllers, err = flux.StartControllers(ctx, s.Env, flux.Options{}, dir)
	if err != nil {
		return err
	}
	s.Say("source-controller and kustomize-controller %s ready in %.1fs (logs in %s)", flux.ControllersVersion, time.Since(started).Seconds(), dir)
	s.Say("artifacts served on http://%s; git repositories on %s", bed.controllers.ArtifactAddr, bed.gitBase)
	return nil
}

// stop stops the controllers and the git server and removes the repositories.
func (b *fluxBed) stop() error {
	var err error
	if b.controllers != nil {
		err = b.controllers.Stop()
	}
	if b.stopGit != nil {
		b.stopGit()
	}
	for _, dir := range []string{b.gitRoot, b.cacheDir} {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
	return err
}

// servedRepo is a repository the demo serves to Flux and commits to, as a developer would push.
type servedRepo struct {
	url  string
	repo *git.Repository
}

// newRepo creates an empty bare repository served to Flux over HTTP.
func (s *Story) newRepo(name string) (*servedRepo, error) {
	if s.flux == nil {
		return nil, fmt.Errorf("the Flux controllers are not running")
	}
	if _, err := gogit.PlainInit(filepath.Join(s.flux.gitRoot, name+".git"), true); err != nil {
		return nil, fmt.Errorf("init repository %s: %w", name, err)
	}
	url := s.flux.gitBase + "/" + name + ".git"
	repo, err := s.flux.cache.Open(url, git.Auth{}, git.Options{})
	if err != nil {
		return nil, err
	}
	return &servedRepo{url: url, repo: repo}, nil
}

// commit pushes files onto branch and returns the new commit.
func (r *servedRepo) commit(ctx context.Context, branch, msg string, files map[string]string) (string, error) {
	_ = r.repo.Fetch(ctx, branch)
	contents := make(map[string][]byte, len(files))
	for name, data := range files {
		contents[name] = []byte(data)
	}
	return r.repo.CommitFiles(ctx, git.CommitRequest{Branch: branch, Message: msg, Files: contents})
}

// configMap is a manifest of a ConfigMap named name with data.
func configMap(name string, data map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n", name)
	for _, k := range slices.Sorted(maps.Keys(data)) {
		fmt.Fprintf(&b, "  %s: %q\n", k, data[k])
	}
	return b.String()
}

// deployment is a GitRepository and a Kustomization of the same name that deploy a branch.
type deployment struct {
	name, url, branch string
	// gates, when set, annotates the Kustomization.
	gates string
	// interval is how often Flux fetches and applies: 1m, or 1h where the promoter's requestedAt
	// is what makes Flux fetch a merge.
	interval string
	// secret names the Secret with the username and password of the repository, if it needs one.
	secret string
}

// fluxDeploys is the manifest of d, deploying into the story's namespace. The Kustomization comes
// first, so kustomize-controller finds no source yet and waits for it.
func (s *Story) fluxDeploys(d deployment) string {
	annotations, auth := "", ""
	if d.gates != "" {
		annotations = "\n  annotations:\n    gating.sluice.dev/gates: " + d.gates
	}
	if d.secret != "" {
		auth = "\n  secretRef: {name: " + d.secret + "}"
	}
	return fmt.Sprintf(`
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: %[1]s%[4]s
spec:
  interval: %[5]s
  prune: true
  targetNamespace: %[6]s
  sourceRef: {kind: GitRepository, name: %[1]s}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: %[1]s
spec:
  url: %[2]s
  ref: {branch: %[3]s}
  interval: %[5]s%[7]s
`, d.name, d.url, d.branch, annotations, d.interval, s.Namespace, auth)
}

// fluxStatus reads the status of a Flux object of the story's namespace.
func (s *Story) fluxStatus(ctx context.Context, kustomization bool, name string) (map[string]any, error) {
	gvr := flux.GitRepositories
	if kustomization {
		gvr = flux.Kustomizations
	}
	u, err := s.Env.Dynamic.Resource(gvr).Namespace(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	return status, nil
}

// waitApplied waits until real kustomize-controller reports commit of branch applied by the
// Kustomization, Ready for that revision, and says so.
func (s *Story) waitApplied(ctx context.Context, kustomization, branch, commit string) error {
	revision := flux.Revision(branch, commit)
	var last any
	err := testenv.Wait(ctx, fluxTimeout, func(ctx context.Context) (bool, error) {
		status, err := s.fluxStatus(ctx, true, kustomization)
		if err != nil {
			return false, err
		}
		last = status["lastAppliedRevision"]
		return last == revision && flux.ReadyFor(status, revision), nil
	})
	if err != nil {
		return fmt.Errorf("kustomize-controller did not apply %s of Kustomization %s (last applied %v): %w", revision, kustomization, last, err)
	}
	s.Say("kustomize-controller applied %s@sha1:%s (Kustomization %s)", branch, commit[:7], kustomization)
	return nil
}

// wakeSource asks source-controller to fetch now, as `flux reconcile source git` or a push
// webhook does, and waits until it has handled the request.
func (s *Story) wakeSource(ctx context.Context, name string) error {
	at := time.Now().UTC().Format(time.RFC3339Nano)
	if _, err := s.Kubectl(ctx, "annotate", "gitrepository", name, "--overwrite", "reconcile.fluxcd.io/requestedAt="+at); err != nil {
		return err
	}
	return testenv.Wait(ctx, fluxTimeout, func(ctx context.Context) (bool, error) {
		status, err := s.fluxStatus(ctx, false, name)
		if err != nil {
			return false, err
		}
		return status["lastHandledReconcileAt"] == at, nil
	})
}

// waitConfigMap waits until the ConfigMap in the story's namespace has data[key] == value, as
// Flux applied it.
func (s *Story) waitConfigMap(ctx context.Context, name, key, value string) error {
	var last string
	err := testenv.Wait(ctx, fluxTimeout, func(ctx context.Context) (bool, error) {
		cm, err := s.Env.Kube.CoreV1().ConfigMaps(s.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			last = "(absent)"
			return false, nil
		}
		if err != nil {
			return false, err
		}
		last = cm.Data[key]
		return last == value, nil
	})
	if err != nil {
		return fmt.Errorf("ConfigMap %s: %s is %q, not %q: %w", name, key, last, value, err)
	}
	return nil
}

// waitFor polls cond until it holds, for at most fluxTimeout.
func waitFor(ctx context.Context, cond func(context.Context) (bool, error)) error {
	return testenv.Wait(ctx, fluxTimeout, cond)
}
