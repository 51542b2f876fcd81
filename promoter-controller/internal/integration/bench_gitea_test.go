package integration

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
	receiver "github.com/sluicehq/sluice/promoter-controller/internal/webhook"
	"github.com/sluicehq/sluice/testenv"
	giteatest "github.com/sluicehq/sluice/testenv/gitea"
)

// giteaBench is a Gitea repository whose pushes reach the promoter's webhook receiver.
type giteaBench struct {
	f    *fixture
	srv  *giteatest.Server
	repo *git.Repository
	envs []string
}

func newGiteaBench(b *testing.B, envs ...string) *giteaBench {
	b.Helper()
	ctx := context.Background()
	ns := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must(b, err)
	srv, cloneURL, repo, d0 := giteaRepo(b, map[string][]byte{"v": []byte("0")})
	for _, e := range envs {
		hydrateTo(b, repo, "", e, d0, e)
	}

	_, err = env.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Data: map[string][]byte{
			scmv1alpha1.SecretKeyToken: []byte(srv.Token), scmv1alpha1.SecretKeyWebhookSecret: []byte("bench-secret"),
			scmv1alpha1.GitSecretKeyUsername: []byte(srv.AdminUser), scmv1alpha1.GitSecretKeyPassword: []byte(srv.Token),
		},
	}, metav1.CreateOptions{})
	must(b, err)
	_, err = env.Sluice.ScmV1alpha1().ScmProviders(ns).Create(ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "gitea"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: scmv1alpha1.ScmProviderGitea, BaseURL: srv.URL, AllowInsecureLoopbackHTTP: true,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "gitea"}},
	}, metav1.CreateOptions{})
	must(b, err)
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(ns).Create(ctx, &scmv1alpha1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: scmv1alpha1.ScmRepositorySpec{
			URL: cloneURL, AllowInsecureLoopbackHTTP: true, ProviderRef: scmv1alpha1.LocalObjectReference{Name: "gitea"},
			Owner: srv.AdminUser, Name: "app",
			Auth: &scmv1alpha1.GitAuth{Type: scmv1alpha1.GitAuthBasic, SecretRef: scmv1alpha1.LocalObjectReference{Name: "gitea"}},
		},
	}, metav1.CreateOptions{})
	must(b, err)
	spec := promoterv1alpha1.PromotionStrategySpec{RepositoryRef: promoterv1alpha1.LocalReference{Name: "app"}, DryBranch: "main"}
	for _, e := range envs {
		spec.Environments = append(spec.Environments, promoterv1alpha1.Environment{Branch: e})
	}
	_, err = env.Sluice.PromoterV1alpha1().PromotionStrategies(ns).Create(ctx, &promoterv1alpha1.PromotionStrategy{
		ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: spec,
	}, metav1.CreateOptions{})
	must(b, err)

	hooks, addr := webhookConfig(b, b.TempDir())
	stop := startPromoterWith(b, env.Config, hooks)
	b.Cleanup(stop)
	port := addr.(*net.TCPAddr).Port
	must(b, srv.API(ctx, "POST", "/repos/"+srv.AdminUser+"/app/hooks", map[string]any{
		"type":   "gitea",
		"active": true,
		"events": []string{"push", "pull_request"},
		"config": map[string]string{
			"url":          fmt.Sprintf("http://127.0.0.1:%d%s%s/gitea", port, receiver.WebhookPath, ns),
			"content_type": "json",
			"secret":       "bench-secret",
		},
	}, nil))
	return &giteaBench{f: &fixture{ns: ns, ctx: ctx}, srv: srv, repo: repo, envs: envs}
}

func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// promote commits to the dry branch (untimed), then times the hydrator's pushes to every
// <env>-next until the last environment runs the new dry commit.
func (g *giteaBench) promote(b *testing.B, i int) {
	ctx := context.Background()
	b.StopTimer()
	_ = g.repo.Fetch(ctx, "main")
	dry, err := g.repo.CommitFiles(ctx, git.CommitRequest{Branch: "main", Files: map[string][]byte{"v": []byte(fmt.Sprint(i))}, Message: fmt.Sprint("change ", i)})
	must(b, err)
	b.StartTimer()
	for _, e := range g.envs {
		hydrateTo(b, g.repo, e, e+"-next", dry, fmt.Sprint(e, i))
	}
	last := g.envs[len(g.envs)-1]
	_, err = testenv.WaitEnvironment(ctx, 2*time.Minute, env.Sluice, g.f.ns, "app", last, testenv.ActiveOn(dry))
	must(b, err)
}

// BenchmarkPushToMergeOnGitea measures, on a real Gitea, the time from the hydrator's push to
// <env>-next until the change is merged into the environment, delivered by webhook (the
// strategy's fallback poll is the default 5m, so a poll cannot be what delivers it). The
// baseline is the floor the SCM sets: opening and merging the same pull request by API directly,
// in the same run.
func BenchmarkPushToMergeOnGitea(b *testing.B) {
	testenv.SkipIfShort(b)
	b.Run("baseline-gitea-api-open-and-merge", func(b *testing.B) {
		srv := giteatest.StartForTest(b)
		ctx := context.Background()
		_, err := srv.CreateRepo(ctx, "app", giteatest.AutoInit())
		must(b, err)
		p, err := scm.New("gitea", scm.Config{Key: "bench/gitea", BaseURL: srv.URL, AllowInsecureLoopbackHTTP: true,
			Credentials: scm.Credentials{Token: srv.Token}, Limiters: ratelimit.NewRegistry()})
		must(b, err)
		cloneURL := srv.URL + "/" + srv.AdminUser + "/app.git"
		cache, err := git.NewCache(b.TempDir(), nil)
		must(b, err)
		repo, err := cache.Open(cloneURL, git.Auth{Username: srv.AdminUser, Password: srv.Token}, git.Options{})
		must(b, err)
		sr := scm.Repository{Owner: srv.AdminUser, Name: "app"}
		b.ResetTimer()
		for i := range b.N {
			head := hydrateTo(b, repo, "main", "dev-next", gittestDry(i), fmt.Sprint(i))
			pr, err := p.CreatePullRequest(ctx, sr, scm.NewPullRequest{Title: "promote", Head: "dev-next", Base: "main"})
			must(b, err)
			must(b, testenv.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
				_, err := p.MergePullRequest(ctx, sr, pr.Number, scm.MergeOptions{ExpectedHeadSHA: head})
				return err == nil, nil
			}))
		}
	})
	b.Run("webhook-one-hop", func(b *testing.B) {
		g := newGiteaBench(b, "dev")
		b.ResetTimer()
		for i := range b.N {
			g.promote(b, i)
		}
	})
	b.Run("webhook-three-hops", func(b *testing.B) {
		g := newGiteaBench(b, "dev", "staging", "prod")
		b.ResetTimer()
		for i := range b.N {
			g.promote(b, i)
		}
	})
}

func gittestDry(i int) string { return fmt.Sprintf("%040x", i+1) }
