package soak

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/testenv/gitea"
)

// giteaProvider is the ScmProvider, and its Secret, of the strategies on Gitea.
const giteaProvider = "gitea"

// onGitea: one strategy in four is on Gitea (pull requests, commit statuses on the SCM), the rest
// on the plain git server; with fewer than four strategies, the last one is.
func onGitea(i, strategies int) bool {
	if strategies < 4 {
		return i == strategies-1
	}
	return i%4 == 3
}

// giteaSide is the Gitea of a run and the fault proxy every controller and the hydrator reach it
// through; the checker reads Gitea directly.
type giteaSide struct {
	srv    *gitea.Server
	faults *gitFaults
	front  *httptest.Server
}

func startGitea(ctx context.Context) (*giteaSide, error) {
	srv, err := gitea.Start(ctx, gitea.Options{})
	if err != nil {
		return nil, fmt.Errorf("start gitea: %w", err)
	}
	target, err := url.Parse(srv.URL)
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	gf := &gitFaults{next: httputil.NewSingleHostReverseProxy(target), delay: 2 * time.Second}
	return &giteaSide{srv: srv, faults: gf, front: httptest.NewServer(gf)}, nil
}

func (g *giteaSide) close() {
	if g == nil {
		return
	}
	g.front.Close()
	_ = g.srv.Close()
}

// createProvider makes the Gitea ScmProvider (its API through the fault proxy) and its Secret.
func (g *giteaSide) createProvider(ctx context.Context, r *soakRun) error {
	_, err := r.env.Kube.CoreV1().Secrets(r.w.ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: giteaProvider},
		Data: map[string][]byte{
			scmv1alpha1.SecretKeyToken:       []byte(g.srv.Token),
			scmv1alpha1.GitSecretKeyUsername: []byte(g.srv.AdminUser), scmv1alpha1.GitSecretKeyPassword: []byte(g.srv.Token),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return create(ctx, r.env.Dynamic, r.w.ns, fmt.Sprintf(`{apiVersion: scm.sluice.dev/v1alpha1, kind: ScmProvider, metadata: {name: %s},
	  spec: {type: gitea, baseURL: %q, allowInsecureLoopbackHTTP: true, secretRef: {name: %s}}}`, giteaProvider, g.front.URL, giteaProvider))
}

// newRepo creates an empty repository on Gitea and opens it for the hydrator, through the proxy.
func (g *giteaSide) newRepo(ctx context.Context, cache *git.Cache, cliRoot, name string) (*strategy, string, error) {
	if _, err := g.srv.CreateRepo(ctx, name); err != nil {
		return nil, "", err
	}
	u := g.front.URL + "/" + g.srv.AdminUser + "/" + name + ".git"
	repo, err := cache.Open(u, git.Auth{Username: g.srv.AdminUser, Password: g.srv.Token}, git.Options{})
	if err != nil {
		return nil, "", err
	}
	remote, err := url.Parse(u)
	if err != nil {
		return nil, "", err
	}
	remote.User = url.UserPassword(g.srv.AdminUser, g.srv.Token)
	cli, err := newGitCLI(ctx, filepath.Join(cliRoot, name+".git"), remote.String())
	if err != nil {
		return nil, "", err
	}
	return &strategy{name: name, repo: repo, dir: g.srv.RepoDir(g.srv.AdminUser, name), owner: g.srv.AdminUser, provider: giteaProvider, cli: cli}, u, nil
}

// setUpStrategies makes the run's repositories, on the plain git server or on Gitea, and their
// strategies.
func (r *soakRun) setUpStrategies(ctx context.Context, plain *gitServer) error {
	if err := create(ctx, r.env.Dynamic, r.w.ns, `{apiVersion: scm.sluice.dev/v1alpha1, kind: ScmProvider, metadata: {name: plain-git}, spec: {type: git}}`); err != nil {
		return err
	}
	if r.gitea != nil {
		if err := r.gitea.createProvider(ctx, r); err != nil {
			return err
		}
	}
	cache, err := git.NewCache(filepath.Join(plain.root, ".hydrator"), nil)
	if err != nil {
		return err
	}
	for i := 0; i < r.cfg.Strategies; i++ {
		name := fmt.Sprintf("app-%02d", i)
		var s *strategy
		var u string
		if r.gitea != nil && onGitea(i, r.cfg.Strategies) {
			s, u, err = r.gitea.newRepo(ctx, cache, filepath.Join(plain.root, ".cli"), name)
		} else {
			s, u, err = plain.newRepo(cache, name)
		}
		if err != nil {
			return fmt.Errorf("repository %s: %w", name, err)
		}
		if err := r.w.setUp(ctx, s, u); err != nil {
			return fmt.Errorf("set up %s: %w", name, err)
		}
		if r.flux != nil && s.provider != giteaProvider && onFlux(i, r.cfg.Strategies) {
			if err := r.deployWithFlux(ctx, s); err != nil {
				return fmt.Errorf("deploy %s with Flux: %w", name, err)
			}
		}
		r.w.strategy = append(r.w.strategy, s)
	}
	return nil
}

// giteaStatus is one commit status as Gitea's API shows it.
type giteaStatus struct {
	Context string `json:"context"`
	State   string `json:"status"`
}

// scmStatuses reads the combined status of sha in repo, straight from Gitea (not through the
// proxy: the checker's reads are no controller's SCM calls), as context -> state.
func (g *giteaSide) scmStatuses(ctx context.Context, repo, sha string) (map[string]string, error) {
	var combined struct {
		Statuses []giteaStatus `json:"statuses"`
	}
	if err := g.srv.API(ctx, http.MethodGet, fmt.Sprintf("/repos/%s/%s/commits/%s/status", g.srv.AdminUser, repo, sha), nil, &combined); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range combined.Statuses {
		out[s.Context] = s.State
	}
	return out, nil
}

// describePull says what Gitea holds of a pull request that does not settle: whether it thinks
// it mergeable, and the commits it compares, which tell a conflict from a check that never ends.
func (g *giteaSide) describePull(ctx context.Context, repo, number string) string {
	var pull struct {
		State     string `json:"state"`
		Mergeable bool   `json:"mergeable"`
		Merged    bool   `json:"merged"`
		MergeBase string `json:"merge_base"`
		Head      struct {
			Ref string `json:"ref"`
			SHA string `json:"sha"`
		} `json:"head"`
		Base struct {
			Ref string `json:"ref"`
			SHA string `json:"sha"`
		} `json:"base"`
	}
	if err := g.srv.API(ctx, http.MethodGet, fmt.Sprintf("/repos/%s/%s/pulls/%s", g.srv.AdminUser, repo, number), nil, &pull); err != nil {
		return fmt.Sprintf(" Gitea: %v", err)
	}
	return fmt.Sprintf(" Gitea: %s, mergeable %t, merged %t, head %s@%s, base %s@%s, merge base %s", pull.State, pull.Mergeable, pull.Merged,
		pull.Head.Ref, short(pull.Head.SHA), pull.Base.Ref, short(pull.Base.SHA), short(pull.MergeBase))
}

// scmStatusWait bounds how long, once everything converged, the soak waits for the last
// CommitStatus writes to reach Gitea (a send that met a 502 is retried with backoff).
const scmStatusWait = 2 * time.Minute

// statusesReachedTheSCM checks invariant 7: every CommitStatus of a repository on Gitea shows
// there, in the end, with its last phase. It retries until scmStatusWait, then reports each one
// that does not.
func (r *soakRun) statusesReachedTheSCM(ctx context.Context) error {
	if r.gitea == nil {
		return nil
	}
	onGitea := map[string]bool{}
	for _, s := range r.w.strategy {
		onGitea[s.name] = s.provider == giteaProvider
	}
	deadline := time.Now().Add(scmStatusWait)
	for {
		missing, checked, err := r.statusMismatches(ctx, onGitea)
		if err == nil && (len(missing) == 0 || time.Now().After(deadline)) {
			r.check.count(7, checked)
			for _, m := range missing {
				r.check.violate(Violation{7, m.where, m.what})
			}
			return nil
		}
		if err != nil && time.Now().After(deadline) {
			return fmt.Errorf("invariant 7: %w", err)
		}
		if err := sleep(ctx, 2*time.Second); err != nil {
			return err
		}
	}
}

type mismatch struct{ where, what string }

// statusMismatches compares every CommitStatus on a Gitea repository with what Gitea shows.
func (r *soakRun) statusMismatches(ctx context.Context, onGitea map[string]bool) ([]mismatch, int, error) {
	list, err := r.w.sluice.CommitstatusV1alpha1().CommitStatuses(r.w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	var out []mismatch
	checked := 0
	shown := map[string]map[string]string{}
	for _, cs := range list.Items {
		repo := cs.Spec.RepositoryRef.Name
		if !onGitea[repo] {
			continue
		}
		checked++
		key := repo + "@" + cs.Spec.SHA
		if _, ok := shown[key]; !ok {
			if shown[key], err = r.gitea.scmStatuses(ctx, repo, cs.Spec.SHA); err != nil {
				return nil, 0, err
			}
		}
		if got := shown[key][cs.Spec.Name]; got != string(cs.Spec.Phase) {
			out = append(out, mismatch{repo + "/" + cs.Name, fmt.Sprintf("phase %s, but Gitea shows %q for %s on %s", cs.Spec.Phase, got, cs.Spec.Name, short(cs.Spec.SHA))})
		}
	}
	return out, checked, nil
}
