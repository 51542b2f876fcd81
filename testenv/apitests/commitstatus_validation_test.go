package apitests

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	csv1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
)

func TestCommitStatusValidation(t *testing.T) {
	valid := csv1.CommitStatusSpec{
		RepositoryRef: csv1.RepositoryReference{Name: "app"},
		SHA:           strings.Repeat("a", 40),
		Name:          "sluice/health",
		Phase:         csv1.CommitStatusSuccess,
		URL:           "https://dash.example.com/app",
	}
	with := func(f func(*csv1.CommitStatusSpec)) csv1.CommitStatusSpec {
		s := valid
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name    string
		spec    csv1.CommitStatusSpec
		wantErr string
	}{
		{name: "valid", spec: valid},
		{name: "sha-256", spec: with(func(s *csv1.CommitStatusSpec) { s.SHA = strings.Repeat("b", 64) })},
		{name: "no url", spec: with(func(s *csv1.CommitStatusSpec) { s.URL = "" })},
		{name: "short sha", spec: with(func(s *csv1.CommitStatusSpec) { s.SHA = "abc1234" }), wantErr: "spec.sha"},
		{name: "uppercase sha", spec: with(func(s *csv1.CommitStatusSpec) { s.SHA = strings.Repeat("A", 40) }), wantErr: "spec.sha"},
		{name: "unknown phase", spec: with(func(s *csv1.CommitStatusSpec) { s.Phase = "queued" }), wantErr: "Unsupported value"},
		{name: "empty name", spec: with(func(s *csv1.CommitStatusSpec) { s.Name = "" }), wantErr: "spec.name"},
		{name: "ftp url", spec: with(func(s *csv1.CommitStatusSpec) { s.URL = "ftp://x.example.com" }), wantErr: "url must be an absolute http or https URL"},
		{name: "relative url", spec: with(func(s *csv1.CommitStatusSpec) { s.URL = "/dash" }), wantErr: "url must be an absolute http or https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &csv1.CommitStatus{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "cs-", Namespace: "default", Labels: map[string]string{csv1.KeyLabel: "argocd-health"}},
				Spec:       tc.spec,
			}
			_, err := client.CommitstatusV1alpha1().CommitStatuses("default").Create(context.Background(), obj, metav1.CreateOptions{})
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

// kubectl get shows KEY (the label), SHA (short, from status), PHASE, SYNCED and AGE; -o wide adds
// the full SHA and the repository.
func TestPrinterColumns(t *testing.T) {
	ctx := context.Background()
	obj := &csv1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{Name: "printed", Namespace: "default", Labels: map[string]string{csv1.KeyLabel: "argocd-health"}},
		Spec: csv1.CommitStatusSpec{RepositoryRef: csv1.RepositoryReference{Name: "app"}, SHA: strings.Repeat("c", 40),
			Name: "health", Phase: csv1.CommitStatusPending},
	}
	created, err := client.CommitstatusV1alpha1().CommitStatuses("default").Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	created.Status.ShortSHA = csv1.ShortSHA(created.Spec.SHA)
	_, err = client.CommitstatusV1alpha1().CommitStatuses("default").UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)

	raw, err := client.CommitstatusV1alpha1().RESTClient().Get().Namespace("default").Resource("commitstatuses").Name("printed").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Raw()
	require.NoError(t, err)
	var table metav1.Table
	require.NoError(t, json.Unmarshal(raw, &table))
	var names, wide []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			names = append(names, c.Name)
		} else {
			wide = append(wide, c.Name)
		}
	}
	assert.Equal(t, []string{"Name", "Key", "SHA", "Phase", "Synced", "Age"}, names)
	assert.Equal(t, []string{"Full SHA", "Repository"}, wide)
	require.Len(t, table.Rows, 1)
	assert.Equal(t, []any{"printed", "argocd-health", "ccccccc", "pending"}, table.Rows[0].Cells[:4])
	assert.Equal(t, []any{strings.Repeat("c", 40), "app"}, table.Rows[0].Cells[6:8])
}
