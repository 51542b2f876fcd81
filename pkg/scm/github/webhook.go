package github

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
)

// Webhook headers GitHub sends.
const (
	SignatureHeader = "X-Hub-Signature-256"
	EventHeader     = "X-GitHub-Event"
)

// VerifyWebhook implements scm.Webhooks: an HMAC-SHA256 of the body in X-Hub-Signature-256.
func (p *Provider) VerifyWebhook(header http.Header, body []byte) error {
	return verifyWebhook(p.webhookSecret, header, body)
}

func verifyWebhook(secret []byte, header http.Header, body []byte) error {
	if err := webhook.VerifyHMACSHA256(secret, body, header.Get(SignatureHeader), "sha256="); err != nil {
		return fmt.Errorf("github webhook: %w", err)
	}
	return nil
}

// ParseWebhook implements scm.Webhooks.
func (p *Provider) ParseWebhook(header http.Header, body []byte) (*scm.Event, error) {
	return parseWebhook(header.Get(EventHeader), body)
}

type ghRepository struct {
	Name     string `json:"name"`
	FullName string `json:"full_name"`
	Owner    struct {
		Login string `json:"login"`
	} `json:"owner"`
}

func (r ghRepository) neutral() scm.Repository {
	if r.Owner.Login != "" && r.Name != "" {
		return scm.Repository{Owner: r.Owner.Login, Name: r.Name}
	}
	owner, name, _ := strings.Cut(r.FullName, "/")
	return scm.Repository{Owner: owner, Name: name}
}

type ghPush struct {
	Ref        string       `json:"ref"`
	Before     string       `json:"before"`
	After      string       `json:"after"`
	Deleted    bool         `json:"deleted"`
	Repository ghRepository `json:"repository"`
}

type ghBranch struct {
	Ref string `json:"ref"`
	SHA string `json:"sha"`
}

type ghPullRequestEvent struct {
	Action      string `json:"action"`
	Number      int64  `json:"number"`
	PullRequest struct {
		Number         int64    `json:"number"`
		Title          string   `json:"title"`
		Body           string   `json:"body"`
		State          string   `json:"state"`
		Merged         bool     `json:"merged"`
		MergeCommitSHA string   `json:"merge_commit_sha"`
		HTMLURL        string   `json:"html_url"`
		Head           ghBranch `json:"head"`
		Base           ghBranch `json:"base"`
	} `json:"pull_request"`
	Repository ghRepository `json:"repository"`
}

func parseWebhook(event string, body []byte) (*scm.Event, error) {
	ev := &scm.Event{Provider: Name, Type: event, Kind: scm.EventIgnored}
	switch event {
	case "ping":
		ev.Kind = scm.EventPing
		var ping struct {
			Repository *ghRepository `json:"repository"`
		}
		if err := json.Unmarshal(body, &ping); err != nil {
			return nil, fmt.Errorf("github ping payload is not valid JSON: %w", err)
		}
		if ping.Repository != nil {
			ev.Repository = ping.Repository.neutral()
		}
	case "push":
		var push ghPush
		if err := json.Unmarshal(body, &push); err != nil {
			return nil, fmt.Errorf("github push payload is not valid JSON: %w", err)
		}
		if push.Ref == "" {
			return nil, fmt.Errorf("github push payload has no ref")
		}
		ev.Kind = scm.EventPush
		ev.Repository = push.Repository.neutral()
		ev.Push = &scm.PushEvent{
			Ref:     push.Ref,
			Branch:  scm.BranchFromRef(push.Ref),
			Before:  push.Before,
			After:   push.After,
			Deleted: push.Deleted || scm.ZeroSHA(push.After),
		}
	case "pull_request":
		var pr ghPullRequestEvent
		if err := json.Unmarshal(body, &pr); err != nil {
			return nil, fmt.Errorf("github pull_request payload is not valid JSON: %w", err)
		}
		number := pr.PullRequest.Number
		if number == 0 {
			number = pr.Number
		}
		if number <= 0 {
			return nil, fmt.Errorf("github pull_request payload has no pull request number")
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
		ev.PullRequest = &scm.PullRequestEvent{Action: pullRequestAction(pr.Action, pr.PullRequest.Merged), PullRequest: out}
	}
	return ev, nil
}

func pullRequestAction(action string, merged bool) scm.PullRequestAction {
	switch action {
	case "opened":
		return scm.ActionOpened
	case "reopened":
		return scm.ActionReopened
	case "synchronize":
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
