package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/suspend"
	"github.com/sluicehq/sluice/testenv"
	"github.com/sluicehq/sluice/ui/internal/setup"
)

// TestRevertFromThePipelinePageCreatesARevertCommit: local mode; Revert… on an environment
// offers its healthy dry commits, the confirmation names the one chosen, and confirming creates
// the RevertCommit the rollback-controller acts on, with an Event naming the person.
func TestRevertFromThePipelinePageCreatesARevertCommit(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	ctx := context.Background()
	// dev runs the new commit; the old one was healthy there an hour ago.
	createStrategy(t, ns, promoterv1alpha1.EnvironmentStatus{Branch: "env/dev",
		Active:             promoterv1alpha1.CommitState{DrySHA: newSHA, Phase: "failure"},
		LastHealthyDrySHAs: []promoterv1alpha1.HealthyDrySHA{{SHA: newSHA, Time: metav1.Now()}, {SHA: oldSHA, Time: metav1.NewTime(time.Now().Add(-time.Hour))}},
	})

	b := browser(t)
	signIn(b, t, url)
	within(b, t, chromedp.Navigate(url+"/pipelines/"+ns+"/checkout"), chromedp.WaitVisible(css(`#live.on`)),
		follow(`a[href^="/act/revert/"]`), chromedp.WaitVisible(css(`#f-sha`)))
	choices := read(b, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#f-sha option')].map(o => o.value)`))
	assert.Equal(t, []string{oldSHA}, choices, "only the healthy commits dev does not run now")
	within(b, t, chromedp.SendKeys(css(`#f-reason`), "checkout errors after 2222222"),
		chromedp.Click(css(`button[type=submit]`)), chromedp.WaitVisible(css(`#change`)))
	change := read(b, t, chromedp.Text(css(`#change`)))
	assert.Contains(t, change, "environment env/dev of checkout goes back to dry commit "+oldSHA, "the confirmation says exactly what changes")
	within(b, t, chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`.done`)))

	reverts, err := env.Sluice.RollbackV1alpha1().RevertCommits(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, reverts.Items, 1, "one RevertCommit")
	rc := reverts.Items[0]
	assert.Equal(t, "checkout", rc.Spec.PromotionStrategyRef.Name)
	assert.Equal(t, "env/dev", rc.Spec.ActiveBranch)
	assert.Equal(t, oldSHA, rc.Spec.DrySHA)
	assert.Equal(t, "checkout errors after 2222222", rc.Spec.Reason)
	waitEventNamingMe(t, ns, rc.Name, "RevertRequestedFromUI")
}

// TestRollbackFromTheRollbacksPageAnnotatesTheRelease: Roll back… on a ManifestRelease offers its
// kept snapshots but the current one, and confirming sets the annotation the rollback-controller
// acts on, with an Event naming the person.
func TestRollbackFromTheRollbacksPageAnnotatesTheRelease(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	ctx := context.Background()
	releases := env.Sluice.RollbackV1alpha1().ManifestReleases(ns)
	mr, err := releases.Create(ctx, &rollbackv1alpha1.ManifestRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "payments"},
		Spec: rollbackv1alpha1.ManifestReleaseSpec{Source: rollbackv1alpha1.ManifestSource{
			ConfigMaps: []rollbackv1alpha1.ConfigMapReference{{Name: "payments-manifests"}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	now := metav1.Now()
	mr.Status.UpgradeNumber, mr.Status.DeployedVersion = 2, "v2"
	mr.Status.History = []rollbackv1alpha1.ReleaseHistoryEntry{
		{Number: 2, Action: rollbackv1alpha1.ActionUpgrade, Version: "v2", Digest: "sha256:" + strings.Repeat("2", 64), Time: now, Test: rollbackv1alpha1.TestFailed},
		{Number: 1, Action: rollbackv1alpha1.ActionUpgrade, Version: "v1", Digest: "sha256:" + strings.Repeat("1", 64), Time: now, Test: rollbackv1alpha1.TestPassed},
	}
	_, err = releases.UpdateStatus(ctx, mr, metav1.UpdateOptions{})
	require.NoError(t, err)

	b := browser(t)
	signIn(b, t, url)
	within(b, t, chromedp.Navigate(url+"/rollbacks"), chromedp.WaitVisible(css(`#live.on`)),
		follow(`a[href="/act/rollback/`+ns+`/payments"]`), chromedp.WaitVisible(css(`#f-number`)))
	choices := read(b, t, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#f-number option')].map(o => o.value)`))
	assert.Equal(t, []string{"1"}, choices, "every kept snapshot but the one deployed")
	within(b, t, chromedp.Click(css(`button[type=submit]`)), chromedp.WaitVisible(css(`#change`)))
	change := read(b, t, chromedp.Text(css(`#change`)))
	assert.Contains(t, change, "ManifestRelease "+ns+"/payments: the annotation "+rollbackv1alpha1.RollbackToAnnotation+"=1 is set", "the confirmation says exactly what changes")
	within(b, t, chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`.done`)))

	mr, err = releases.Get(ctx, "payments", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1", mr.Annotations[rollbackv1alpha1.RollbackToAnnotation])
	waitEventNamingMe(t, ns, "payments", "RollbackRequestedFromUI")
}

// TestSuspendAndResumeFromTheGatePage: Suspend… sets RFC-0006's annotation with the reason the
// person gives, Resume… removes it, and the page follows each change live.
func TestSuspendAndResumeFromTheGatePage(t *testing.T) {
	url := startUI(t, env.Config, setup.Config{Identity: setup.IdentityKubeconfig})
	ns := newNamespace(t)
	ctx := context.Background()
	createGate(t, ns, "freeze")
	gates := env.Sluice.GatingV1alpha1().Gates(ns)

	b := browser(t)
	signIn(b, t, url)
	within(b, t, chromedp.Navigate(url+"/gates/"+ns+"/freeze"), chromedp.WaitVisible(css(`#live.on`)),
		follow(`a[href^="/act/suspend/`+ns+`/freeze"]`), chromedp.WaitVisible(css(`#f-reason`)),
		chromedp.SendKeys(css(`#f-reason`), "auditors at work"), chromedp.Click(css(`button[type=submit]`)), chromedp.WaitVisible(css(`#change`)))
	change := read(b, t, chromedp.Text(css(`#change`)))
	assert.Contains(t, change, `Gate `+ns+`/freeze: the annotation `+suspend.Annotation+`="auditors at work" is set`, "the confirmation says exactly what changes")
	within(b, t, chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`.done`)))
	g, err := gates.Get(ctx, "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "auditors at work", g.Annotations[suspend.Annotation])
	waitEventNamingMe(t, ns, "freeze", "SuspendedFromUI")

	within(b, t, chromedp.Navigate(url+"/act/resume/"+ns+"/freeze?kind=Gate"), chromedp.WaitVisible(css(`button[type=submit]`)),
		chromedp.Click(css(`button[type=submit]`)), chromedp.WaitVisible(css(`#change`)))
	change = read(b, t, chromedp.Text(css(`#change`)))
	assert.Contains(t, change, "Gate "+ns+"/freeze: the annotation "+suspend.Annotation+" is removed")
	within(b, t, chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`.done`)))
	g, err = gates.Get(ctx, "freeze", metav1.GetOptions{})
	require.NoError(t, err)
	_, suspended := g.Annotations[suspend.Annotation]
	assert.False(t, suspended, "resumed")
	waitEventNamingMe(t, ns, "freeze", "ResumedFromUI")
}

// waitEventNamingMe waits for a Normal Event with reason on the object named name that names the
// kubeconfig's user, as the API server knows them.
func waitEventNamingMe(t *testing.T, ns, name, reason string) {
	t.Helper()
	ctx := context.Background()
	me, err := env.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	user := me.Status.UserInfo.Username
	require.NotEmpty(t, user)
	testenv.WaitFor(t, 30*time.Second, func() (bool, error) {
		events, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeNormal && e.Reason == reason && strings.Contains(e.Message, "(by "+user+", from the Sluice UI)") {
				return true, nil
			}
		}
		return false, nil
	}, "a %s Event on %s/%s names %s", reason, ns, name, user)
}
