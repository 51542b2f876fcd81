package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	scmv1alpha1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm/github"
	"github.com/sluicehq/sluice/pkg/scm/gitlab"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
	receiver "github.com/sluicehq/sluice/promoter-controller/internal/webhook"
	"github.com/sluicehq/sluice/testenv"
)

const (
	hookSecret = "hook-secret"
	zeroSHA    = "0000000000000000000000000000000000000000"
)

// change is what a delivery reports: a hydrated commit on <env>-next, proposed into <env>.
type change struct {
	owner, name string
	head, base  string // branches
	before      string // head's previous tip, zeroSHA when the push created it
	after       string // head's new tip
	baseSHA     string
}

func (c change) fullName() string { return c.owner + "/" + c.name }

// forge is one SCM's webhook dialect: its headers, its proof of origin and its payloads, shaped
// as the SCM sends them.
type forge struct {
	name        string
	typ         scmv1alpha1.ScmProviderType
	owner       string // ScmRepository spec.owner
	otherOwner  string // an owner of a repository named alike that no strategy uses
	eventHeader string
	// authenticate adds what proves a delivery comes from the SCM holding secret.
	authenticate func(h http.Header, secret string, body []byte)
	push         func(c change) (event string, body map[string]any)
	pullRequest  func(c change) (event string, body map[string]any)
}

var forges = []forge{
	{
		name: "github", typ: scmv1alpha1.ScmProviderGitHub, owner: "acme", otherOwner: "someone-else",
		eventHeader: github.EventHeader,
		authenticate: func(h http.Header, secret string, body []byte) {
			h.Set(github.SignatureHeader, "sha256="+webhook.SignHMACSHA256([]byte(secret), body))
			h.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
			h.Set("User-Agent", "GitHub-Hookshot/044aadd")
		},
		push: func(c change) (string, map[string]any) {
			return "push", map[string]any{
				"ref": "refs/heads/" + c.head, "before": c.before, "after": c.after,
				"created": c.before == zeroSHA, "deleted": false, "forced": false, "base_ref": nil,
				"compare":     "https://github.com/" + c.fullName() + "/compare/" + c.before[:12] + "..." + c.after[:12],
				"commits":     []any{map[string]any{"id": c.after, "message": "hydrate", "distinct": true}},
				"head_commit": map[string]any{"id": c.after, "message": "hydrate"},
				"repository":  githubRepository(c),
				"pusher":      map[string]any{"name": "hydrator-bot"},
				"sender":      map[string]any{"login": "hydrator-bot", "type": "Bot"},
			}
		},
		pullRequest: func(c change) (string, map[string]any) {
			return "pull_request", map[string]any{
				"action": "synchronize", "number": 7,
				"pull_request": map[string]any{
					"number": 7, "state": "open", "title": "Promote to " + c.base, "body": "", "merged": false,
					"merge_commit_sha": nil, "html_url": "https://github.com/" + c.fullName() + "/pull/7",
					"head": map[string]any{"ref": c.head, "sha": c.after},
					"base": map[string]any{"ref": c.base, "sha": c.baseSHA},
				},
				"repository": githubRepository(c),
				"sender":     map[string]any{"login": "hydrator-bot", "type": "Bot"},
			}
		},
	},
	{
		// A project in a subgroup: GitLab names it by its whole path, and the owner is the group path.
		name: "gitlab", typ: scmv1alpha1.ScmProviderGitLab, owner: "acme/platform", otherOwner: "acme",
		eventHeader: gitlab.EventHeader,
		authenticate: func(h http.Header, secret string, _ []byte) {
			h.Set(gitlab.TokenHeader, secret)
			h.Set("X-Gitlab-Event-UUID", "0b5e2c7a-3f1d-4d7e-9a51-3f0c8a6b9d21")
			h.Set("User-Agent", "GitLab/17.5.0")
		},
		push: func(c change) (string, map[string]any) {
			return "Push Hook", map[string]any{
				"object_kind": "push", "event_name": "push",
				"before": c.before, "after": c.after, "ref": "refs/heads/" + c.head, "ref_protected": false,
				"checkout_sha": c.after, "user_username": "hydrator-bot", "project_id": 15,
				"project":             gitlabProject(c),
				"commits":             []any{map[string]any{"id": c.after, "message": "hydrate"}},
				"total_commits_count": 1,
				"repository":          map[string]any{"name": c.name, "homepage": "https://gitlab.example.com/" + c.fullName()},
			}
		},
		pullRequest: func(c change) (string, map[string]any) {
			return "Merge Request Hook", map[string]any{
				"object_kind": "merge_request", "event_type": "merge_request",
				"user":    map[string]any{"username": "hydrator-bot"},
				"project": gitlabProject(c),
				"object_attributes": map[string]any{
					"id": 99, "iid": 7, "title": "Promote to " + c.base, "description": "",
					"state": "opened", "action": "update", "source_branch": c.head, "target_branch": c.base,
					"url":              "https://gitlab.example.com/" + c.fullName() + "/-/merge_requests/7",
					"merge_commit_sha": nil, "last_commit": map[string]any{"id": c.after},
				},
				"repository": map[string]any{"name": c.name, "homepage": "https://gitlab.example.com/" + c.fullName()},
			}
		},
	},
}

func githubRepository(c change) map[string]any {
	return map[string]any{
		"id": 1296269, "name": c.name, "full_name": c.fullName(), "private": true,
		"owner":    map[string]any{"login": c.owner, "id": 1, "type": "Organization"},
		"html_url": "https://github.com/" + c.fullName(), "default_branch": "main",
	}
}

func gitlabProject(c change) map[string]any {
	return map[string]any{
		"id": 15, "name": c.name, "path_with_namespace": c.fullName(), "default_branch": "main",
		"namespace": c.owner[strings.LastIndex(c.owner, "/")+1:],
		"web_url":   "https://gitlab.example.com/" + c.fullName(),
	}
}

// Pushes and pull request events from GitHub and GitLab, signed as each SCM signs them, re-evaluate
// the strategy long before its hourly poll. Deliveries with a wrong signature are refused, and one
// about a repository no strategy uses is accepted without waking the strategy.
func TestWebhookFromEachProviderTriggersAReconcile(t *testing.T) {
	for _, fg := range forges {
		t.Run(fg.name, func(t *testing.T) {
			for _, kind := range []string{"push", "pull request"} {
				t.Run(kind, func(t *testing.T) {
					event := fg.push
					if kind == "pull request" {
						event = fg.pullRequest
					}
					webhookWakesTheStrategy(t, fg, event)
				})
			}
		})
	}
}

func webhookWakesTheStrategy(t *testing.T, fg forge, event func(change) (string, map[string]any)) {
	f := newFixture(t)
	f.useForge(fg)
	f.bootstrap("dev")
	f.strategy(func(s *promoterv1alpha1.PromotionStrategySpec) {
		oneEnv(s)
		s.Interval = &metav1.Duration{Duration: time.Hour}
	})
	hooks, addr := webhookConfig(t, t.TempDir())
	m, _ := startPromoterManager(t, env.Config, hooks, nil)
	f.waitEnv("dev", "first reconcile", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.HydratedSHA != "" })
	// The first status write wakes the strategy once more; that reconcile ends before the change
	// lands, or it could pick the change up without any delivery.
	f.settle(m)
	mark := observed(m).mark()

	d1 := f.dryCommit("change")
	c := change{owner: fg.owner, name: "app", head: "dev-next", base: "dev", before: f.repo.Branch(t, "dev-next"), baseSHA: f.repo.Branch(t, "dev")}
	if c.before == "" {
		c.before = zeroSHA
	}
	c.after = f.hydrateUnannounced(d1, "dev")
	url := fmt.Sprintf("http://%s%s%s/forge", addr, receiver.WebhookPath, f.ns)

	assert.Equal(t, http.StatusUnauthorized, deliver(t, url, fg, "not-the-secret", event, c), "delivery with a wrong signature")
	garbled := func(c change) (string, map[string]any) {
		// The event's own kind, with fields of the wrong types.
		name, payload := event(c)
		for field, wrong := range map[string]any{"ref": 42, "repository": "not an object", "project": []int{1}, "object_attributes": "x", "pull_request": 7} {
			if _, ok := payload[field]; ok {
				payload[field] = wrong
			}
		}
		return name, payload
	}
	assert.Equal(t, http.StatusBadRequest, deliver(t, url, fg, hookSecret, garbled, c), "signed delivery whose payload cannot be parsed")
	other := c
	other.owner = fg.otherOwner
	assert.Equal(t, http.StatusAccepted, deliver(t, url, fg, hookSecret, event, other), "delivery about another repository")
	// A delivery wakes its strategies before it is answered: none of these woke this one, so
	// nothing will read the change until the next delivery.
	assert.False(t, observed(m).enqueuedSince(mark, "promotionstrategy", f.ns+"/app"),
		"the strategy was woken though no delivery about its repository was accepted")

	assert.Equal(t, http.StatusAccepted, deliver(t, url, fg, hookSecret, event, c), "signed delivery")
	assert.True(t, observed(m).enqueuedSince(mark, "promotionstrategy", f.ns+"/app"), "the delivery wakes the strategy before it is answered")
	f.waitEnv("dev", "proposal seen after the webhook", func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Proposed.DrySHA == d1 })
}

// useForge puts the fixture's repository on an ScmProvider "forge" of fg's type. The SCM behind
// it is not running: git is still served by the fixture, and only proposals, which need no SCM
// call, are observed.
func (f *fixture) useForge(fg forge) {
	f.t.Helper()
	_, err := env.Kube.CoreV1().Secrets(f.ns).Create(f.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "forge"},
		Data:       map[string][]byte{scmv1alpha1.SecretKeyToken: []byte("t"), scmv1alpha1.SecretKeyWebhookSecret: []byte(hookSecret)},
	}, metav1.CreateOptions{})
	require.NoError(f.t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmProviders(f.ns).Create(f.ctx, &scmv1alpha1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "forge"},
		Spec: scmv1alpha1.ScmProviderSpec{Type: fg.typ, BaseURL: "http://127.0.0.1:1", AllowInsecureLoopbackHTTP: true,
			SecretRef: &scmv1alpha1.LocalObjectReference{Name: "forge"}},
	}, metav1.CreateOptions{})
	require.NoError(f.t, err)
	_, err = testenv.Update(f.ctx, env.Sluice.ScmV1alpha1().ScmRepositories(f.ns), "app", func(gr *scmv1alpha1.ScmRepository) {
		gr.Spec.ProviderRef.Name = "forge"
		gr.Spec.Owner = fg.owner
	})
	require.NoError(f.t, err)
}

// hydrateUnannounced is hydrate without the refresh annotation, so that only a webhook tells the
// controller about the new commit. It returns the hydrated commit.
func (f *fixture) hydrateUnannounced(dry, branch string) string {
	f.t.Helper()
	if tip := f.repo.Branch(f.t, branch); tip != "" {
		f.repo.SetBranch(f.t, branch+"-next", tip)
	}
	sha := f.repo.CommitFiles(f.t, branch+"-next", map[string]string{"manifest.yaml": "env: " + branch + "\ndry: " + dry + "\n"}, "hydrate "+dry[:7])
	f.repo.AddNote(f.t, "refs/notes/hydrator.metadata", sha, string(hydratorNote(dry)))
	return sha
}

// deliver posts the event about c as fg would, proven with secret, and returns the status code.
func deliver(t *testing.T, url string, fg forge, secret string, event func(change) (string, map[string]any), c change) int {
	t.Helper()
	name, payload := event(c)
	body, err := json.Marshal(payload)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(fg.eventHeader, name)
	fg.authenticate(req.Header, secret, body)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}
