package gitlab

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/webhook"
)

// Webhook headers GitLab sends.
const (
	TokenHeader = "X-Gitlab-Token"
	EventHeader = "X-Gitlab-Event"
)

// VerifyWebhook implements scm.Webhooks. GitLab does not sign deliveries: it sends the secret
// token configured on the hook, compared here in constant time.
func (p *Provider) VerifyWebhook(header http.Header, _ []byte) error {
	return verifyWebhook(p.webhookSecret, header)
}

func verifyWebhook(secret []byte, header http.Header) error {
	if err := webhook.VerifyToken(secret, header.Get(TokenHeader)); err != nil {
		return fmt.Errorf("gitlab webhook: %w", err)
	}
	return nil
}

// ParseWebhook implements scm.Webhooks. The payload's object_kind decides, not the header, so
// system hooks and project hooks parse alike.
func (p *Provider) ParseWebhook(header http.Header, body []byte) (*scm.Event, error) {
	return parseWebhook(header.Get(EventHeader), body)
}

type glProject struct {
	PathWithNamespace string `json:"path_with_namespace"`
}

type glPush struct {
	ObjectKind string    `json:"object_kind"`
	Ref        string    `json:"ref"`
	Before     string    `json:"before"`
	After      string    `json:"after"`
	Project    glProject `json:"project"`
}

type glMergeRequest struct {
	ObjectKind       string    `json:"object_kind"`
	Project          glProject `json:"project"`
	ObjectAttributes struct {
		IID            int64  `json:"iid"`
		Title          string `json:"title"`
		Description    string `json:"description"`
		State          string `json:"state"`
		Action         string `json:"action"`
		SourceBranch   string `json:"source_branch"`
		TargetBranch   string `json:"target_branch"`
		URL            string `json:"url"`
		MergeCommitSHA string `json:"merge_commit_sha"`
		LastCommit     struct {
			ID string `json:"id"`
		} `json:"last_commit"`
	} `json:"object_attributes"`
}

func repositoryFromPath(path string) scm.Repository {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return scm.Repository{Owner: path[:i], Name: path[i+1:]}
		}
	}
	return scm.Repository{Name: path}
}

// glStatusChange is what Sluice reads of pipeline and job (build) hooks: the commit whose
// statuses changed.
type glStatusChange struct {
	SHA              string    `json:"sha"`
	BuildName        string    `json:"build_name"`
	Project          glProject `json:"project"`
	ObjectAttributes struct {
		SHA string `json:"sha"`
	} `json:"object_attributes"`
}

func parseStatusChange(kind string, body []byte) (*scm.CommitStatusEvent, scm.Repository, error) {
	var p glStatusChange
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, scm.Repository{}, fmt.Errorf("gitlab %s payload is not valid: %w", kind, err)
	}
	out := &scm.CommitStatusEvent{SHA: p.SHA, Name: p.BuildName}
	if kind == "pipeline" {
		out = &scm.CommitStatusEvent{SHA: p.ObjectAttributes.SHA}
	}
	if err := scm.ValidateSHA(out.SHA); err != nil {
		return nil, scm.Repository{}, fmt.Errorf("gitlab %s payload: %w", kind, err)
	}
	return out, repositoryFromPath(p.Project.PathWithNamespace), nil
}

func parseWebhook(event string, body []byte) (*scm.Event, error) {
	var kind struct {
		ObjectKind string `json:"object_kind"`
	}
	if err := json.Unmarshal(body, &kind); err != nil {
		return nil, fmt.Errorf("gitlab webhook payload is not valid JSON: %w", err)
	}
	ev := &scm.Event{Provider: Name, Type: event, Kind: scm.EventIgnored}
	switch kind.ObjectKind {
	case "push":
		var push glPush
		if err := json.Unmarshal(body, &push); err != nil {
			return nil, fmt.Errorf("gitlab push payload is not valid: %w", err)
		}
		if push.Ref == "" {
			return nil, fmt.Errorf("gitlab push payload has no ref")
		}
		ev.Kind = scm.EventPush
		ev.Repository = repositoryFromPath(push.Project.PathWithNamespace)
		ev.Push = &scm.PushEvent{
			Ref:     push.Ref,
			Branch:  scm.BranchFromRef(push.Ref),
			Before:  push.Before,
			After:   push.After,
			Deleted: scm.ZeroSHA(push.After),
		}
	case "pipeline", "build":
		change, repo, err := parseStatusChange(kind.ObjectKind, body)
		if err != nil {
			return nil, err
		}
		ev.Kind, ev.Repository, ev.CommitStatus = scm.EventCommitStatus, repo, change
	case "merge_request":
		var mr glMergeRequest
		if err := json.Unmarshal(body, &mr); err != nil {
			return nil, fmt.Errorf("gitlab merge_request payload is not valid: %w", err)
		}
		a := mr.ObjectAttributes
		if a.IID <= 0 {
			return nil, fmt.Errorf("gitlab merge_request payload has no merge request iid")
		}
		ev.Kind = scm.EventPullRequest
		ev.Repository = repositoryFromPath(mr.Project.PathWithNamespace)
		out := scm.PullRequest{
			Number:  a.IID,
			Title:   a.Title,
			Body:    a.Description,
			Head:    a.SourceBranch,
			Base:    a.TargetBranch,
			HeadSHA: a.LastCommit.ID,
			URL:     a.URL,
			State:   scm.PullRequestOpen,
		}
		switch a.State {
		case "merged":
			out.State = scm.PullRequestMerged
			out.MergeCommitSHA = a.MergeCommitSHA
		case "closed":
			out.State = scm.PullRequestClosed
		}
		ev.PullRequest = &scm.PullRequestEvent{Action: mergeRequestAction(a.Action), PullRequest: out}
	}
	return ev, nil
}

func mergeRequestAction(action string) scm.PullRequestAction {
	switch action {
	case "open":
		return scm.ActionOpened
	case "reopen":
		return scm.ActionReopened
	case "update":
		// GitLab reports both new commits and edits as update; treat it as a moved head so the
		// head is read again.
		return scm.ActionSynchronized
	case "close":
		return scm.ActionClosed
	case "merge":
		return scm.ActionMerged
	}
	return scm.ActionOther
}
