package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/pkg/scm/scmtest"
	"github.com/sluicehq/sluice/testenv"
)

// A shard (--watch-label-selector) syncs the CommitStatuses carrying its label, through an
// ScmRepository and ScmProvider that carry none: it reads them from the manager's references.
func TestAShardSyncsItsCommitStatusesThroughUnlabelledReferences(t *testing.T) {
	testenv.SkipIfShort(t)
	srv := scmtest.NewGitHub(t, githubToken)
	srv.AddRepo("acme", "app")
	srv.SetQuota(1000, time.Hour)
	ns := githubSetup(t, srv, nil)
	r := startController(t, controllerOptions{mutate: func(o *options.Options) {
		o.Namespace = ns
		o.WatchLabelSelector = "shard=a"
	}})

	other := newCommitStatus(ns, "other-shard", "app", sha2, commitstatusv1alpha1.CommitStatusSuccess)
	createCommitStatus(t, other)
	mine := newCommitStatus(ns, "mine", "app", sha1, commitstatusv1alpha1.CommitStatusSuccess)
	mine.Labels["shard"] = "a"
	createCommitStatus(t, mine)
	waitFor(t, ns, "mine", synced(commitstatusv1alpha1.CommitStatusSuccess))

	// The watch delivers in order: "other-shard", created first, would be in the cache by now.
	_, err := r.m.SluiceInformers.Commitstatus().V1alpha1().CommitStatuses().Lister().CommitStatuses(ns).Get("other-shard")
	assert.True(t, apierrors.IsNotFound(err), "another shard's CommitStatus is not watched: %v", err)
	require.Equal(t, int64(1), srv.StatusPosts(), "only this shard's status is sent")
}
