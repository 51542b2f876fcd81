package gitea

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
)

// Webhook headers. Forgejo sends its own names and, for compatibility, Gitea's.
const (
	SignatureHeader        = "X-Gitea-Signature"
	EventHeader            = "X-Gitea-Event"
	ForgejoSignatureHeader = "X-Forgejo-Signature"
	ForgejoEventHeader     = "X-Forgejo-Event"
)

// VerifyWebhook implements scm.Webhooks: a hex HMAC-SHA256 of the body, without prefix.
func (p *Provider) VerifyWebhook(header http.Header, body []byte) error {
	return verifyWebhook(p.name, p.webhookSecret, header, body)
}

func verifyWebhook(name string, secret []byte, header http.Header, body []byte) error {
	sig := header.Get(SignatureHeader)
	if name == ForgejoName && header.Get(ForgejoSignatureHeader) != "" {
		sig = header.Get(ForgejoSignatureHeader)
	}
	if err := webhook.VerifyHMACSHA256(secret, body, sig, ""); err != nil {
		return fmt.Errorf("%s webhook: %w", name, err)
	}
	return nil
}

// ParseWebhook implements scm.Webhooks.
func (p *Provider) ParseWebhook(header http.Header, body []byte) (*scm.Event, error) {
	event := header.Get(EventHeader)
	if p.name == ForgejoName && header.Get(ForgejoEventHeader) != "" {
		event = header.Get(ForgejoEventHeader)
	}
	return parseWebhook(p.name, event, body)
}

type giteaRepository struct {
	Name     string `json:"name"`
	FullName string `json:"full_name"`
	Owner    struct {
		Login    string `json:"login"`
		UserName string `json:"username"`
	} `json:"owner"`
}

func (r giteaRepository) neutral() scm.Repository {
	owner := r.Owner.UserName
	if owner == "" {
		owner = r.Owner.Login
	}
	if owner != "" && r.Name != "" {
		return scm.Repository{Owner: owner, Name: r.Name}
	}
	o, n, _ := strings.Cut(r.FullName, "/")
	return scm.Repository{Owner: o, Name: n}
}

type giteaPush struct {
	Ref        string          `json:"ref"`
	Before     string          `json:"before"`
	After      string          `json:"after"`
	Repository giteaRepository `json:"repository"`
}

type giteaBranch struct {
	Ref string `json:"ref"`
	SHA string `json:"sha"`
}

type giteaPullRequestEvent struct {
	Action      string `json:"action"`
	Number      int64  `json:"number"`
	PullRequest struct {
		Number         int64       `json:"number"`
		Title          string      `json:"title"`
		Body           string      `json:"body"`
		State          string      `json:"state"`
		Merged         bool        `json:"merged"`
		MergeCommitSHA string      `json:"merge_commit_sha"`
		HTMLURL        string      `json:"html_url"`
		Head           giteaBranch `json:"head"`
		Base           giteaBranch `json:"base"`
	} `json:"pull_request"`
	Repository giteaRepository `json:"repository"`
}

func parseWebhook(provider, event string, body []byte) (*scm.Event, error) {
	ev := &scm.Event{Provider: provider, Type: event, Kind: scm.EventIgnored}
	switch event {
	case "push":
		var push giteaPush
		if err := json.Unmarshal(body, &push); err != nil {
			return nil, fmt.Errorf("%s push payload is not valid JSON: %w", provider, err)
		}
		if push.Ref == "" {
			return nil, fmt.Errorf("%s push payload has no ref", provider)
		}
		ev.Kind = scm.EventPush
		ev.Repository = push.Repository.neutral()
		ev.Push = &scm.PushEvent{
			Ref:     push.Ref,
			Branch:  scm.BranchFromRef(push.Ref),
			Before:  push.Before,
			After:   push.After,
			Deleted: scm.ZeroSHA(push.After),
		}
	case "pull_request":
		var pr giteaPullRequestEvent
		if err := json.Unmarshal(body, &pr); err != nil {
			return nil, fmt.Errorf("%s pull_request payload is not valid JSON: %w", provider, err)
		}
		number := pr.PullRequest.Number
		if number == 0 {
			number = pr.Number
		}
		if number <= 0 {
			return nil, fmt.Errorf("%s pull_request payload has no pull request number", provider)
		}
		ev.Kind = scm.EventPullRequest
		ev.Repository = pr.Repository.neutral()
		out := scm.PullRequest{
			Number:  number,
			Title:   pr.PullRequest.Title,
			Body:    pr.PullRequest.Body,
			Head:    pr.PullRequest.Head.Ref,
			Base:    pr.PullRequest.Base.Ref,
			HeadSHA: pr.PullRequest.Head.SHA,
			URL:     pr.PullRequest.HTMLURL,
			State:   scm.PullRequestOpen,
		}
		switch {
		case pr.PullRequest.Merged:
			out.State = scm.PullRequestMerged
			out.MergeCommitSHA = pr.PullRequest.MergeCommitSHA
		case pr.PullRequest.State == "closed":
			out.State = scm.PullRequestClosed
		}
		ev.PullRequest = &scm.PullRequestEvent{Action: action(pr.Action, pr.PullRequest.Merged), PullRequest: out}
	}
	return ev, nil
}

func action(a string, merged bool) scm.PullRequestAction {
	switch a {
	case "opened":
		return scm.ActionOpened
	case "reopened":
		return scm.ActionReopened
	case "synchronized":
		return scm.ActionSynchronized
	case "edited":
		return scm.ActionEdited
	case "closed":
		if merged {
			return scm.ActionMerged
		}
		return scm.ActionClosed
	}
	return scm.ActionOther
}
