// Package ghpayload parses GitHub-shaped webhook payloads into scm events. GitHub and Gitea (and
// Forgejo, which keeps Gitea's payloads) send the same push and pull request JSON; a Dialect
// holds the few places where they differ.
package ghpayload

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/pkg/scm"
)

// Dialect is one SCM's variant of the GitHub payloads.
type Dialect struct {
	// Provider is the registered provider name, put in events and errors.
	Provider string
	// SynchronizeAction is the pull request action for a moved head: GitHub's "synchronize",
	// Gitea's "synchronized".
	SynchronizeAction string
	// PushDeletedFlag trusts a push payload's "deleted" (GitHub). Without it only an all-zero
	// after tells a deleted ref.
	PushDeletedFlag bool
	// OwnerUserName prefers a repository owner's "username" to its "login" (Gitea).
	OwnerUserName bool
	// Ping parses ping events (GitHub); otherwise they are ignored like any unknown event.
	Ping bool
}

// dialectField holds a field only some dialects read. It is kept raw, and decoded only by them,
// so that the others accept a payload whatever it holds there, as they would without the field.
type dialectField = json.RawMessage

func decodeDialectField(raw dialectField, into any) error {
	if len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, into)
}

type repository struct {
	Name     string `json:"name"`
	FullName string `json:"full_name"`
	Owner    struct {
		Login    string       `json:"login"`
		UserName dialectField `json:"username"`
	} `json:"owner"`
}

func (d Dialect) repository(r repository) (scm.Repository, error) {
	owner := ""
	if d.OwnerUserName {
		if err := decodeDialectField(r.Owner.UserName, &owner); err != nil {
			return scm.Repository{}, fmt.Errorf("repository.owner.username: %w", err)
		}
	}
	if owner == "" {
		owner = r.Owner.Login
	}
	if owner != "" && r.Name != "" {
		return scm.Repository{Owner: owner, Name: r.Name}, nil
	}
	o, n, _ := strings.Cut(r.FullName, "/")
	return scm.Repository{Owner: o, Name: n}, nil
}

type push struct {
	Ref        string       `json:"ref"`
	Before     string       `json:"before"`
	After      string       `json:"after"`
	Deleted    dialectField `json:"deleted"`
	Repository repository   `json:"repository"`
}

type branch struct {
	Ref string `json:"ref"`
	SHA string `json:"sha"`
}

type pullRequestEvent struct {
	Action      string `json:"action"`
	Number      int64  `json:"number"`
	PullRequest struct {
		Number         int64  `json:"number"`
		Title          string `json:"title"`
		Body           string `json:"body"`
		State          string `json:"state"`
		Merged         bool   `json:"merged"`
		MergeCommitSHA string `json:"merge_commit_sha"`
		HTMLURL        string `json:"html_url"`
		Head           branch `json:"head"`
		Base           branch `json:"base"`
	} `json:"pull_request"`
	Repository repository `json:"repository"`
}

// Parse turns the payload of one delivery of event (the SCM's event header) into an event. Events
// Sluice does not use come back as scm.EventIgnored.
func (d Dialect) Parse(event string, body []byte) (*scm.Event, error) {
	ev := &scm.Event{Provider: d.Provider, Type: event, Kind: scm.EventIgnored}
	var err error
	switch {
	case event == "ping" && d.Ping:
		err = d.parsePing(ev, body)
	case event == "push":
		err = d.parsePush(ev, body)
	case event == "pull_request":
		err = d.parsePullRequest(ev, body)
	case event == "status" || event == "check_run" || event == "check_suite":
		err = d.parseCommitStatus(ev, event, body)
	}
	if err != nil {
		return nil, err
	}
	return ev, nil
}

func (d Dialect) invalidJSON(event string, err error) error {
	return fmt.Errorf("%s %s payload is not valid JSON: %w", d.Provider, event, err)
}

func (d Dialect) parsePing(ev *scm.Event, body []byte) error {
	ev.Kind = scm.EventPing
	var ping struct {
		Repository *repository `json:"repository"`
	}
	if err := json.Unmarshal(body, &ping); err != nil {
		return d.invalidJSON("ping", err)
	}
	if ping.Repository == nil {
		return nil
	}
	repo, err := d.repository(*ping.Repository)
	if err != nil {
		return d.invalidJSON("ping", err)
	}
	ev.Repository = repo
	return nil
}

func (d Dialect) parsePush(ev *scm.Event, body []byte) error {
	var p push
	if err := json.Unmarshal(body, &p); err != nil {
		return d.invalidJSON("push", err)
	}
	deleted := false
	if d.PushDeletedFlag {
		if err := decodeDialectField(p.Deleted, &deleted); err != nil {
			return d.invalidJSON("push", fmt.Errorf("deleted: %w", err))
		}
	}
	repo, err := d.repository(p.Repository)
	if err != nil {
		return d.invalidJSON("push", err)
	}
	if p.Ref == "" {
		return fmt.Errorf("%s push payload has no ref", d.Provider)
	}
	ev.Kind = scm.EventPush
	ev.Repository = repo
	ev.Push = &scm.PushEvent{
		Ref:     p.Ref,
		Branch:  scm.BranchFromRef(p.Ref),
		Before:  p.Before,
		After:   p.After,
		Deleted: deleted || scm.ZeroSHA(p.After),
	}
	return nil
}

func (d Dialect) parsePullRequest(ev *scm.Event, body []byte) error {
	var pr pullRequestEvent
	if err := json.Unmarshal(body, &pr); err != nil {
		return d.invalidJSON("pull_request", err)
	}
	repo, err := d.repository(pr.Repository)
	if err != nil {
		return d.invalidJSON("pull_request", err)
	}
	number := pr.PullRequest.Number
	if number == 0 {
		number = pr.Number
	}
	if number <= 0 {
		return fmt.Errorf("%s pull_request payload has no pull request number", d.Provider)
	}
	ev.Kind = scm.EventPullRequest
	ev.Repository = repo
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
	ev.PullRequest = &scm.PullRequestEvent{Action: d.action(pr.Action, pr.PullRequest.Merged), PullRequest: out}
	return nil
}

func (d Dialect) action(action string, merged bool) scm.PullRequestAction {
	if action != "" && action == d.SynchronizeAction {
		return scm.ActionSynchronized
	}
	switch action {
	case "opened":
		return scm.ActionOpened
	case "reopened":
		return scm.ActionReopened
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

// commitStatusEvent holds what Sluice reads of GitHub's status, check_run and check_suite
// payloads, and Gitea's status payload (GitHub's shape).
type commitStatusEvent struct {
	SHA      string `json:"sha"`
	Context  string `json:"context"`
	CheckRun *struct {
		HeadSHA string `json:"head_sha"`
		Name    string `json:"name"`
	} `json:"check_run"`
	CheckSuite *struct {
		HeadSHA string `json:"head_sha"`
	} `json:"check_suite"`
	Repository repository `json:"repository"`
}

func (d Dialect) parseCommitStatus(ev *scm.Event, event string, body []byte) error {
	var p commitStatusEvent
	if err := json.Unmarshal(body, &p); err != nil {
		return d.invalidJSON(event, err)
	}
	out := &scm.CommitStatusEvent{SHA: p.SHA, Name: p.Context}
	switch {
	case event == "check_run" && p.CheckRun != nil:
		out = &scm.CommitStatusEvent{SHA: p.CheckRun.HeadSHA, Name: p.CheckRun.Name}
	case event == "check_suite" && p.CheckSuite != nil:
		out = &scm.CommitStatusEvent{SHA: p.CheckSuite.HeadSHA}
	}
	if err := scm.ValidateSHA(out.SHA); err != nil {
		return fmt.Errorf("%s %s payload: %w", d.Provider, event, err)
	}
	repo, err := d.repository(p.Repository)
	if err != nil {
		return err
	}
	ev.Kind = scm.EventCommitStatus
	ev.Repository = repo
	ev.CommitStatus = out
	return nil
}
