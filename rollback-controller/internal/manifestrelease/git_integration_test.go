package manifestrelease_test

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	scmv1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git/gittest"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/pkg/text"
	"github.com/sluicehq/sluice/testenv"
)

// gitRepository serves a repository over HTTP from the test and declares it as a ScmRepository.
func (f *fixture) gitRepository(name string) *gittest.Repo {
	f.t.Helper()
	srv := gittest.NewServer(f.t)
	repo := srv.CreateRepo(f.t, name)
	_, err := env.Sluice.ScmV1alpha1().ScmProviders(f.ns).Create(f.ctx, &scmv1.ScmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: scmv1.ScmProviderSpec{Type: scmv1.ScmProviderGit}}, metav1.CreateOptions{})
	require.NoError(f.t, err)
	_, err = env.Sluice.ScmV1alpha1().ScmRepositories(f.ns).Create(f.ctx, &scmv1.ScmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: scmv1.ScmRepositorySpec{URL: srv.URL(name), AllowInsecureLoopbackHTTP: true,
			ProviderRef: scmv1.LocalObjectReference{Name: "plain"}, Owner: "acme", Name: name}}, metav1.CreateOptions{})
	require.NoError(f.t, err)
	return repo
}

func under(dir string, files map[string]string) map[string]string {
	out := map[string]string{}
	for name, data := range files {
		out[dir+"/"+name] = data
	}
	return out
}

// bulky returns n ConfigMaps of random text, which does not compress: together they make a
// snapshot larger than one Secret holds.
func bulky(n, size int) map[string]string {
	rng := rand.New(rand.NewPCG(7, 7))
	files := map[string]string{}
	for i := range n {
		raw := make([]byte, size*3/4)
		for j := range raw {
			raw[j] = byte(rng.Uint32())
		}
		files[fmt.Sprintf("bulk-%d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bulk-%d\ndata:\n  blob: %s\n",
			i, base64.StdEncoding.EncodeToString(raw))
	}
	return files
}

// A git source at tags, then following a branch: each version is a numbered snapshot; one is
// split across two Secrets and read back byte for byte; only historyLimit snapshots are kept.
func TestGitSourceSnapshotsSplitAndPruned(t *testing.T) {
	f := newFixture(t)
	repo := f.gitRepository("platform")
	v1 := repo.CommitFiles(t, "main", under("deploy", app("nginx:1.0")), "v1\n")
	repo.SetRef(t, "refs/tags/v1.0.0", v1)
	f.start(nil)
	limit := int32(2)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: rollbackv1.ManifestSource{Git: &rollbackv1.GitManifestSource{
		RepositoryRef: rollbackv1.LocalReference{Name: "platform"}, Tag: "v1.0.0", Path: "deploy"}}, HistoryLimit: &limit, Timeout: seconds(60)})
	mr := f.waitRelease("web", "v1 deployed", deployed(1))
	assert.Equal(t, "v1.0.0", mr.Status.DeployedVersion, "the version defaults to the tag")
	assert.Equal(t, v1, mr.Status.History[0].Revision)

	big := app("nginx:2.0")
	for name, data := range bulky(3, 600_000) {
		big[name] = data
	}
	v2 := repo.CommitFiles(t, "main", under("deploy", big), "v2 with bulk\n")
	repo.SetRef(t, "refs/tags/v2.0.0", v2)
	f.setGitRef("web", func(g *rollbackv1.GitManifestSource) { g.Tag = "v2.0.0" })
	f.waitRelease("web", "v2 deployed", deployed(2))
	chunk, err := env.Kube.CoreV1().Secrets(f.ns).Get(f.ctx, "web.2-1", metav1.GetOptions{})
	require.NoError(t, err, "the v2 snapshot is split across two Secrets")
	assert.Equal(t, snapshot.SecretType, chunk.Type)
	store := &snapshot.Store{Client: env.Kube.CoreV1()}
	files, info, err := store.Load(f.ctx, f.ns, "web", 2)
	require.NoError(t, err)
	assert.Equal(t, 2, info.Chunks)
	assert.Greater(t, info.CompressedSize, int64(snapshot.DefaultChunkBytes))
	f.assertSnapshotMetrics("web", 2)
	require.Len(t, files, len(big))
	for _, file := range files {
		assert.Equal(t, big[file.Name], string(file.Data), "%s comes back byte for byte", file.Name)
	}

	repo.DeleteFiles(t, "main", "deploy/bulk-0.yaml", "deploy/bulk-1.yaml", "deploy/bulk-2.yaml")
	v3 := repo.CommitFiles(t, "main", under("deploy", app("nginx:3.0")), "v3\n")
	f.setGitRef("web", func(g *rollbackv1.GitManifestSource) { g.Tag, g.Branch = "", "main" })
	mr = f.waitRelease("web", "main deployed", deployed(3))
	assert.Equal(t, "main@"+text.ShortSHA(v3), mr.Status.DeployedVersion, "the version defaults to branch@commit")
	assert.Equal(t, []int64{2, 3}, f.snapshotNumbers("web"), "historyLimit 2 keeps the last two")
	assert.Equal(t, []string{"web.2", "web.2-1", "web.3"}, f.secretNames(), "snapshot 1 is gone, both chunks of 2 stay")
	assert.Equal(t, []string{"ConfigMap/web-config", "Deployment/web"}, f.liveObjects("web"), "the bulk ConfigMaps of v2 are pruned")

	v4 := repo.CommitFiles(t, "main", under("deploy", app("nginx:4.0")), "v4\n")
	mr = f.refresh("web")
	mr = f.waitRelease("web", "the new commit on main deployed", deployed(4))
	assert.Equal(t, v4, mr.Status.History[0].Revision)
	assert.Equal(t, []int64{3, 4}, f.snapshotNumbers("web"))
}

// A source a person must fix is Stalled with what to change, and comes right once it is fixed.
func TestGitSourceProblemsStallWithAFix(t *testing.T) {
	f := newFixture(t)
	repo := f.gitRepository("platform")
	repo.CommitFiles(t, "main", under("deploy", app("nginx:1.0")), "v1\n")
	f.start(nil)
	f.createRelease("web", rollbackv1.ManifestReleaseSpec{Source: rollbackv1.ManifestSource{Git: &rollbackv1.GitManifestSource{
		RepositoryRef: rollbackv1.LocalReference{Name: "platform"}, Tag: "v9.9.9", Path: "deploy"}}})
	mr := f.waitRelease("web", "stalled on the missing tag", stalledWith(ReasonSourceNotFound))
	assert.Contains(t, condition(mr, "Stalled").Message, "no tag v9.9.9")

	f.setGitRef("web", func(g *rollbackv1.GitManifestSource) { g.Tag, g.Branch, g.Path = "", "main", "nowhere" })
	mr = f.waitRelease("web", "stalled on the missing path", stalledWith(ReasonNoManifests))
	assert.Contains(t, condition(mr, "Stalled").Message, "spec.source.git.path")

	f.setGitRef("web", func(g *rollbackv1.GitManifestSource) { g.Path = "deploy" })
	f.waitRelease("web", "deployed once fixed", deployed(1))
}

const ReasonSourceNotFound, ReasonNoManifests = "SourceNotFound", "NoManifests"

func stalledWith(reason string) func(*rollbackv1.ManifestRelease) bool {
	return func(mr *rollbackv1.ManifestRelease) bool {
		c := condition(mr, "Stalled")
		return c.Status == metav1.ConditionTrue && c.Reason == reason && c.ObservedGeneration == mr.Generation
	}
}

func (f *fixture) setGitRef(name string, mutate func(*rollbackv1.GitManifestSource)) {
	f.t.Helper()
	_, err := testenv.Update(f.ctx, env.Sluice.RollbackV1alpha1().ManifestReleases(f.ns), name, func(mr *rollbackv1.ManifestRelease) {
		mutate(mr.Spec.Source.Git)
	})
	require.NoError(f.t, err)
}

// secretNames lists the snapshot Secrets of the namespace.
func (f *fixture) secretNames() []string {
	f.t.Helper()
	return secretNamesIn(f.t, env.Kube, f.ns)
}

func secretNamesIn(t *testing.T, kube kubernetes.Interface, ns string) []string {
	t.Helper()
	list, err := kube.CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "type=" + string(snapshot.SecretType)})
	require.NoError(t, err)
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names
}
