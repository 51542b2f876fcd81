package suite

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/testenv"
)

// promoterLease is the umbrella release's promoter Lease (<fullname>-leader).
const promoterLease = release + "-promoter-controller-leader"

// promotionByWebhook: with a fallback poll of an hour, only Gitea's signed deliveries, through
// the promoter's webhook Service, move a dry change dev -> staging -> prod, through one merged
// pull request per environment on Gitea.
func (c *Cluster) promotionByWebhook(t *testing.T, ns string, server gitServer) *promotion {
	ctx := context.Background()
	p := c.newPromotion(t, ns, server, time.Hour)
	svc, err := c.Kube.CoreV1().Services(system).Get(ctx, release+"-promoter-controller-webhook", metav1.GetOptions{})
	require.NoError(t, err)
	// Gitea's pod resolves the Service's name through the cluster DNS.
	p.addWebhook(t, fmt.Sprintf("http://%s.%s.svc/hooks/%s/gitea", svc.Name, system, ns))
	before := c.webhookDeliveries(t, "accepted")

	d1 := p.propose(t, "web 1.1.0")
	for _, env := range environments {
		p.waitEnvironment(t, env, "is promoted to "+d1[:7], func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Active.DrySHA == d1 })
	}
	assert.Greater(t, c.webhookDeliveries(t, "accepted"), before, "the promoter accepted Gitea's deliveries")
	p.requirePulls(t, 1, true)
	return p
}

// failoverRounds is how many times the leader is deleted in the middle of a promotion.
const failoverRounds = 3

// failover: with two replicas, the leader's pod is deleted while a promotion runs, in each of
// failoverRounds rounds; another replica takes the Lease within the lease duration and finishes
// the promotion, and Gitea ends with one merged pull request per environment and change.
func (c *Cluster) failover(t *testing.T, p *promotion) {
	ctx := context.Background()
	c.helmWait(t, "upgrade", release, c.chart("sluice"), "--namespace", system, "--reuse-values", "--set", "promoter-controller.replicaCount=2")
	// A delivery the Service sends to the standby is passed on to the leader through the
	// strategy's refresh annotation (result "forwarded"), but one sent to the leader pod as it is
	// deleted can be lost, and Gitea does not retry it: the strategy's poll catches up with that.
	_, err := testenv.Update(ctx, c.Sluice.PromoterV1alpha1().PromotionStrategies(p.ns), "web", func(s *promoterv1alpha1.PromotionStrategy) {
		s.Spec.Interval = &metav1.Duration{Duration: 5 * time.Second}
	})
	require.NoError(t, err)
	for round := 1; round <= failoverRounds; round++ {
		c.failoverRound(t, p, round)
	}
	t.Logf("webhook deliveries on the promoter pods now: %v accepted by the leader, %v forwarded by a standby, %v not forwarded",
		c.webhookDeliveries(t, "accepted"), c.webhookDeliveries(t, "forwarded"), c.webhookDeliveries(t, "unforwarded"))
}

func (c *Cluster) failoverRound(t *testing.T, p *promotion, round int) {
	ctx := context.Background()
	leases := c.Kube.CoordinationV1().Leases(system)
	var lease *coordinationv1.Lease
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		l, err := leases.Get(ctx, promoterLease, metav1.GetOptions{})
		lease = l
		return err == nil && len(c.promoterPods(t)) == 2, err
	}, "two promoter replicas are Ready")
	leader, standby := c.leaderAndStandby(t, lease)
	logs := c.followPromoterLogs(t)

	dry := p.propose(t, fmt.Sprintf("web 1.%d.0", round+1))
	p.diagnostics = logs.String
	p.waitEnvironment(t, "dev", "proposes "+dry[:7], func(e promoterv1alpha1.EnvironmentStatus) bool { return e.Proposed.DrySHA == dry })
	start := time.Now()
	require.NoError(t, c.Kube.CoreV1().Pods(system).Delete(ctx, leader, metav1.DeleteOptions{}))
	taken := testenv.WaitForObject(t, 2*time.Minute, leases, promoterLease, func(l *coordinationv1.Lease) bool {
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && !strings.HasPrefix(*l.Spec.HolderIdentity, leader+"_")
	})
	took := time.Since(start)
	// The leader releases the Lease on SIGTERM, so the first replica to ask gets it: the standby,
	// which asks every retry period (2 s), or, as often on this node, the Deployment's
	// replacement pod, which asks as soon as its caches are warm.
	newLeader, _, _ := strings.Cut(*taken.Spec.HolderIdentity, "_")
	t.Logf("round %d: %s took over from %s (the standby was %s)", round, newLeader, leader, standby)
	figures.add(fmt.Sprintf("leader failover %d: delete the leader pod until another replica holds the Lease", round), took)
	assert.Equal(t, *lease.Spec.LeaseTransitions+1, *taken.Spec.LeaseTransitions, "one handover")
	leaseDuration := time.Duration(*taken.Spec.LeaseDurationSeconds) * time.Second
	assert.LessOrEqual(t, taken.Spec.AcquireTime.Sub(start), leaseDuration,
		"another replica took over within the lease duration (it acquired at %s, the leader was deleted at %s)", taken.Spec.AcquireTime, start)
	// The baseline: with one replica, the work waits for the Deployment's replacement pod.
	testenv.WaitFor(t, 2*time.Minute, func() (bool, error) { return len(c.promoterPods(t)) == 2, nil }, "the replacement pod is Ready")
	figures.add(fmt.Sprintf("baseline %d: delete the leader pod until its replacement pod is Ready (one replica)", round), time.Since(start))

	for _, env := range environments {
		// History follows the branch: it is written once the merged pull request is observed.
		e := p.waitEnvironment(t, env, "is promoted to "+dry[:7]+" by the new leader, and records it", func(e promoterv1alpha1.EnvironmentStatus) bool {
			return e.Active.DrySHA == dry && promotionsOf(e, dry) > 0
		})
		assert.Equal(t, 1, promotionsOf(e, dry), "%s records one promotion of %s: %+v", env, dry[:7], e.History)
	}
	p.requirePulls(t, round+1, false)
	p.diagnostics = nil
}

// promotionsOf counts the promotions of dry in an environment's history.
func promotionsOf(e promoterv1alpha1.EnvironmentStatus, dry string) int {
	n := 0
	for _, h := range e.History {
		if h.DrySHA == dry {
			n++
		}
	}
	return n
}

// requirePulls fails unless Gitea has at most perEnv pull requests into each environment (exactly
// perEnv when exact), each merged: a duplicate pull request or merge would show as one more.
// After a failover there can be fewer: a merge whose reply was lost with the deleted leader can
// leave its pull request open on Gitea although Gitea pushed the merge (its head must then be in
// its target), and the next promotion of that environment finds and reuses it.
func (p *promotion) requirePulls(t *testing.T, perEnv int, exact bool) {
	t.Helper()
	prs := p.pulls(t)
	byBase, open := map[string]int{}, map[string]int{}
	for _, pr := range prs {
		byBase[pr.Base.Ref]++
		if pr.Merged {
			continue
		}
		open[pr.Base.Ref]++
		assert.True(t, p.targetHolds(t, pr.Base.Ref, pr.Head.SHA),
			"pull request #%d into %s (%s) is merged, or its head is in %s", pr.Number, pr.Base.Ref, pr.Title, pr.Base.Ref)
		t.Logf("pull request #%d into %s stayed open on Gitea, though %s holds its head: Gitea lost the merge's record with the deleted leader's request", pr.Number, pr.Base.Ref, pr.Base.Ref)
	}
	for _, env := range environments {
		if exact {
			assert.Equal(t, perEnv, byBase[env], "pull requests into %s: %+v", env, prs)
		} else {
			assert.LessOrEqual(t, byBase[env], perEnv, "no duplicate pull request into %s: %+v", env, prs)
			assert.Positive(t, byBase[env], "pull requests into %s: %+v", env, prs)
		}
		assert.LessOrEqual(t, open[env], 1, "at most one open pull request into %s: %+v", env, prs)
	}
}

// targetHolds fetches branch and reports whether it holds sha.
func (p *promotion) targetHolds(t *testing.T, branch, sha string) bool {
	t.Helper()
	require.NoError(t, p.repo.Fetch(context.Background(), branch))
	tip, err := p.repo.Resolve(branch)
	require.NoError(t, err)
	held, err := p.repo.IsAncestor(sha, tip)
	return err == nil && held
}

// leaderAndStandby names the promoter pod holding lease and the other one.
func (c *Cluster) leaderAndStandby(t *testing.T, lease *coordinationv1.Lease) (leader, standby string) {
	t.Helper()
	require.NotNil(t, lease.Spec.HolderIdentity)
	pods := c.promoterPods(t)
	require.Len(t, pods, 2, "two promoter replicas")
	for _, p := range pods {
		if strings.HasPrefix(*lease.Spec.HolderIdentity, p.Name+"_") {
			leader = p.Name
		} else {
			standby = p.Name
		}
	}
	require.NotEmpty(t, leader, "a promoter pod holds %s (%s)", promoterLease, *lease.Spec.HolderIdentity)
	require.NotEmpty(t, standby)
	return leader, standby
}

func (c *Cluster) promoterPods(t *testing.T) []corev1.Pod {
	t.Helper()
	list, err := c.Kube.CoreV1().Pods(system).List(context.Background(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/name=promoter-controller",
	})
	require.NoError(t, err)
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			pods = append(pods, p)
		}
	}
	return pods
}

// webhookDeliveries sums sluice_promoter_webhook_deliveries_total with the given result over
// the promoter pods, scraped from the node at each pod's address.
func (c *Cluster) webhookDeliveries(t *testing.T, result string) float64 {
	t.Helper()
	total := 0.0
	for _, p := range c.promoterPods(t) {
		resp, err := http.Get(fmt.Sprintf("http://%s:8084/metrics", p.Status.PodIP))
		require.NoError(t, err)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "sluice_promoter_webhook_deliveries_total{") || !strings.Contains(line, `result="`+result+`"`) {
				continue
			}
			fields := strings.Fields(line)
			v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
			require.NoError(t, err)
			total += v
		}
		_ = resp.Body.Close()
	}
	return total
}
