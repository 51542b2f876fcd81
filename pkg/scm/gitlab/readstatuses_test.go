package gitlab

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
)

// A commit's statuses (CI jobs among them) and pipelines, in the shapes GitLab's API documents
// ("List the statuses of a commit", "List project pipelines"), a second page of statuses included.
func TestListCommitStatusesReadsStatusesAndPipelines(t *testing.T) {
	srv, p := newFake(t)
	srv.Mux.HandleFunc("GET "+api+"/repository/commits/{sha}/statuses", forProject(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("page") == "2" {
			scmtest.WriteJSON(w, http.StatusOK, []map[string]any{
				{"id": 93, "sha": sha, "ref": "staging-next", "status": "canceled", "name": "e2e", "allow_failure": false},
			})
			return
		}
		w.Header().Set("X-Next-Page", "2")
		w.Header().Set("X-Page", "1")
		scmtest.WriteJSON(w, http.StatusOK, []map[string]any{
			{"id": 90, "sha": sha, "ref": "staging-next", "status": "failed", "name": "kubeconform", "description": "2 invalid", "target_url": "https://gitlab.example.com/acme/app/-/jobs/90"},
			{"id": 91, "sha": sha, "ref": "staging-next", "status": "running", "name": "policy"},
			{"id": 92, "sha": sha, "ref": "staging-next", "status": "success", "name": "sluice/health-staging", "description": "Healthy"},
		})
	}))
	srv.Mux.HandleFunc("GET "+api+"/pipelines", forProject(t, func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, sha, r.URL.Query().Get("sha"))
		scmtest.WriteJSON(w, http.StatusOK, []map[string]any{
			{"id": 701, "iid": 12, "project_id": 1, "sha": sha, "ref": "staging-next", "status": "failed", "source": "push", "web_url": "https://gitlab.example.com/acme/app/-/pipelines/701"},
			{"id": 700, "iid": 11, "project_id": 1, "sha": sha, "ref": "staging-next", "status": "success", "source": "push", "web_url": "https://gitlab.example.com/acme/app/-/pipelines/700"},
		})
	}))

	got, err := p.ListCommitStatuses(context.Background(), repo, sha)
	require.NoError(t, err)
	st := func(src scm.StatusSource, id, name string, state scm.StatusState, desc, url string) scm.ReadStatus {
		return scm.ReadStatus{Source: src, CommitStatus: scm.CommitStatus{SHA: sha, Name: name, State: state, Description: desc, TargetURL: url, ProviderID: id}}
	}
	assert.Equal(t, []scm.ReadStatus{
		st(scm.SourceStatus, "93", "e2e", scm.StatusFailure, "", ""),
		st(scm.SourceStatus, "90", "kubeconform", scm.StatusFailure, "2 invalid", "https://gitlab.example.com/acme/app/-/jobs/90"),
		st(scm.SourcePipeline, "701", "pipeline", scm.StatusFailure, "pipeline #12 on staging-next: failed", "https://gitlab.example.com/acme/app/-/pipelines/701"),
		st(scm.SourceStatus, "91", "policy", scm.StatusPending, "", ""),
		st(scm.SourceStatus, "92", "sluice/health-staging", scm.StatusSuccess, "Healthy", ""),
	}, got, "the newest pipeline of the commit stands for it")
	assert.Len(t, srv.Requests(), 3)
}

func TestPipelineAndJobHooksWakeTheImport(t *testing.T) {
	for _, tc := range []struct{ kind, body, name string }{
		{"pipeline", `{"object_kind":"pipeline","object_attributes":{"id":701,"sha":"` + sha + `","status":"failed"},"project":{"path_with_namespace":"group/sub/app"}}`, ""},
		{"build", `{"object_kind":"build","sha":"` + sha + `","build_name":"kubeconform","build_status":"failed","project":{"path_with_namespace":"group/sub/app"}}`, "kubeconform"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			ev, err := parseWebhook("Pipeline Hook", []byte(tc.body))
			require.NoError(t, err)
			assert.Equal(t, scm.EventCommitStatus, ev.Kind)
			assert.Equal(t, repo, ev.Repository)
			assert.Equal(t, &scm.CommitStatusEvent{SHA: sha, Name: tc.name}, ev.CommitStatus)
		})
	}
}
