package github

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
)

// The combined status and the check runs of a commit, in the shapes GitHub's REST API documents
// ("Get the combined status for a specific reference", "List check runs for a Git reference"),
// second pages included.
func TestListCommitStatusesReadsStatusesAndCheckRuns(t *testing.T) {
	srv, p := newFake(t)
	srv.Mux.HandleFunc("GET "+api+"/commits/{ref}/status", func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, sha, r.PathValue("ref"))
		if r.URL.Query().Get("page") == "2" {
			scmtest.WriteJSON(w, http.StatusOK, map[string]any{"state": "failure", "sha": sha, "total_count": 3, "statuses": []map[string]any{
				{"id": 12, "state": "error", "context": "ci/kubeconform", "description": "2 invalid manifests", "target_url": "https://ci.example.com/12"},
			}})
			return
		}
		w.Header().Set("Link", fmt.Sprintf(`<%s%s/commits/%s/status?page=2&per_page=100>; rel="next"`, srv.URL, api, sha))
		scmtest.WriteJSON(w, http.StatusOK, map[string]any{"state": "failure", "sha": sha, "total_count": 3, "statuses": []map[string]any{
			{"id": 10, "state": "success", "context": "sluice/health-staging", "description": "Healthy: 3/3 Current", "url": "x", "created_at": "2026-11-27T06:00:00Z"},
			{"id": 11, "state": "pending", "context": "ci/policy"},
		}})
	})
	srv.Mux.HandleFunc("GET "+api+"/commits/{ref}/check-runs", func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "latest", r.URL.Query().Get("filter"))
		scmtest.WriteJSON(w, http.StatusOK, map[string]any{"total_count": 3, "check_runs": []map[string]any{
			{"id": 501, "head_sha": sha, "name": "test", "status": "completed", "conclusion": "success",
				"details_url": "https://github.example.com/acme/app/runs/501", "output": map[string]any{"title": "42 passed", "summary": "all green"}},
			{"id": 502, "head_sha": sha, "name": "lint", "status": "in_progress", "conclusion": nil},
			{"id": 503, "head_sha": sha, "name": "e2e", "status": "completed", "conclusion": "timed_out", "output": map[string]any{"title": nil, "summary": "timed out after 30m"}},
		}})
	})

	got, err := p.ListCommitStatuses(context.Background(), repo, sha)
	require.NoError(t, err)
	run := func(id, name string, state scm.StatusState, desc, url string) scm.ReadStatus {
		return scm.ReadStatus{Source: scm.SourceCheckRun, CommitStatus: scm.CommitStatus{SHA: sha, Name: name, State: state, Description: desc, TargetURL: url, ProviderID: id}}
	}
	status := func(id, name string, state scm.StatusState, desc, url string) scm.ReadStatus {
		return scm.ReadStatus{Source: scm.SourceStatus, CommitStatus: scm.CommitStatus{SHA: sha, Name: name, State: state, Description: desc, TargetURL: url, ProviderID: id}}
	}
	assert.Equal(t, []scm.ReadStatus{
		status("12", "ci/kubeconform", scm.StatusFailure, "2 invalid manifests", "https://ci.example.com/12"),
		status("11", "ci/policy", scm.StatusPending, "", ""),
		run("503", "e2e", scm.StatusFailure, "timed out after 30m", ""),
		run("502", "lint", scm.StatusPending, "", ""),
		status("10", "sluice/health-staging", scm.StatusSuccess, "Healthy: 3/3 Current", ""),
		run("501", "test", scm.StatusSuccess, "42 passed", "https://github.example.com/acme/app/runs/501"),
	}, got)
	assert.Len(t, srv.Requests(), 3, "two pages of statuses, one of check runs")
}

func TestListCommitStatusesRefusesAShortSHAWithoutACall(t *testing.T) {
	srv, p := newFake(t)
	_, err := p.ListCommitStatuses(context.Background(), repo, "abc123")
	require.Error(t, err)
	assert.Equal(t, scm.KindInvalid, scm.KindOf(err))
	assert.Empty(t, srv.Requests())
}

func TestListCommitStatusesReportsARefusedCheckRunRead(t *testing.T) {
	srv, p := newFake(t)
	srv.Mux.HandleFunc("GET "+api+"/commits/{ref}/status", func(w http.ResponseWriter, _ *http.Request) {
		scmtest.WriteJSON(w, http.StatusOK, map[string]any{"state": "success", "statuses": []any{}})
	})
	srv.Mux.HandleFunc("GET "+api+"/commits/{ref}/check-runs", func(w http.ResponseWriter, _ *http.Request) {
		ghError(w, http.StatusForbidden, "Resource not accessible by personal access token")
	})
	_, err := p.ListCommitStatuses(context.Background(), repo, sha)
	require.Error(t, err)
	assert.True(t, scm.IsPermanent(err), "a token without checks:read will not gain it by retrying: %v", err)
	assert.NotContains(t, err.Error(), token)
}

func TestStatusEventsWakeTheImport(t *testing.T) {
	for _, tc := range []struct {
		event, body, name string
	}{
		{"status", `{"sha":"` + sha + `","context":"ci/kubeconform","state":"failure","repository":{"name":"app","full_name":"acme/app","owner":{"login":"acme"}}}`, "ci/kubeconform"},
		{"check_run", `{"action":"completed","check_run":{"head_sha":"` + sha + `","name":"test"},"repository":{"name":"app","owner":{"login":"acme"}}}`, "test"},
		{"check_suite", `{"action":"completed","check_suite":{"head_sha":"` + sha + `"},"repository":{"name":"app","owner":{"login":"acme"}}}`, ""},
	} {
		t.Run(tc.event, func(t *testing.T) {
			ev, err := parseWebhook(tc.event, []byte(tc.body))
			require.NoError(t, err)
			assert.Equal(t, scm.EventCommitStatus, ev.Kind)
			assert.Equal(t, repo, ev.Repository)
			assert.Equal(t, &scm.CommitStatusEvent{SHA: sha, Name: tc.name}, ev.CommitStatus)
		})
	}
	_, err := parseWebhook("status", []byte(`{"sha":"nope","repository":{"name":"app","owner":{"login":"acme"}}}`))
	assert.ErrorContains(t, err, "not a full commit id")
}
