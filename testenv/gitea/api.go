package gitea

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// tokenScopes cover what tests do through the API: repositories, commit statuses, branches,
// webhooks (repository), pull requests and their comments (repository, issue), users and orgs.
var tokenScopes = []string{"write:repository", "write:issue", "write:user", "write:organization"}

// API calls Gitea's REST API as the admin. path is below /api/v1 (e.g. "/repos/sluice/app").
// in, when not nil, is sent as JSON; out, when not nil, receives the JSON answer. Answers other
// than 2xx become errors carrying Gitea's message.
func (s *Server) API(ctx context.Context, method, path string, in, out any) error {
	req, err := s.newRequest(ctx, method, path, in)
	if err != nil {
		return err
	}
	if s.Token != "" {
		req.Header.Set("Authorization", "token "+s.Token)
	}
	return s.do(req, out)
}

func (s *Server) newRequest(ctx context.Context, method, path string, in any) (*http.Request, error) {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encoding the body of %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+"/api/v1"+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

func (s *Server) do(req *http.Request, out any) error {
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("gitea %s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("gitea %s %s: reading the answer: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("gitea %s %s: %s: %s", req.Method, req.URL.Path, resp.Status, errorMessage(data))
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("gitea %s %s: decoding the answer: %w", req.Method, req.URL.Path, err)
	}
	return nil
}

// errorMessage picks the message out of Gitea's JSON error, or the start of a body that is not one.
func errorMessage(body []byte) string {
	var apiErr struct {
		Message string   `json:"message"`
		Errors  []string `json:"errors"`
	}
	if err := json.Unmarshal(body, &apiErr); err == nil && apiErr.Message != "" {
		if len(apiErr.Errors) > 0 {
			return apiErr.Message + " (" + strings.Join(apiErr.Errors, "; ") + ")"
		}
		return apiErr.Message
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	return text
}

// createToken makes the admin's API token, authenticating with the password: Gitea only hands
// out tokens to basic auth.
func (s *Server) createToken(ctx context.Context, name string) (string, error) {
	in := map[string]any{"name": name, "scopes": tokenScopes}
	req, err := s.newRequest(ctx, http.MethodPost, "/users/"+s.AdminUser+"/tokens", in)
	if err != nil {
		return "", err
	}
	req.SetBasicAuth(s.AdminUser, s.AdminPassword)
	var out struct {
		Token string `json:"sha1"`
	}
	if err := s.do(req, &out); err != nil {
		return "", fmt.Errorf("creating the admin's API token: %w", err)
	}
	if out.Token == "" {
		return "", fmt.Errorf("creating the admin's API token: gitea answered without a token")
	}
	return out.Token, nil
}

// RepoOption adjusts a repository made by CreateRepo.
type RepoOption func(*createRepo)

type createRepo struct {
	Name          string `json:"name"`
	AutoInit      bool   `json:"auto_init"`
	DefaultBranch string `json:"default_branch"`
	Private       bool   `json:"private"`
}

// AutoInit makes Gitea create the repository with an initial commit (a README) on main.
func AutoInit() RepoOption {
	return func(r *createRepo) { r.AutoInit = true }
}

// CreateRepo creates a public repository owned by the admin, empty unless AutoInit is given, with
// main as default branch. It returns the HTTP clone URL.
func (s *Server) CreateRepo(ctx context.Context, name string, opts ...RepoOption) (string, error) {
	in := createRepo{Name: name, DefaultBranch: "main"}
	for _, opt := range opts {
		opt(&in)
	}
	var out struct {
		CloneURL string `json:"clone_url"`
	}
	if err := s.API(ctx, http.MethodPost, "/user/repos", in, &out); err != nil {
		return "", fmt.Errorf("creating repository %q: %w", name, err)
	}
	if out.CloneURL == "" {
		return "", fmt.Errorf("creating repository %q: gitea answered without a clone URL", name)
	}
	return out.CloneURL, nil
}
