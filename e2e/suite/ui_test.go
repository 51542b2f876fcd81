package suite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/testenv"
)

// uiChart is the web UI's chart, which runs the image sluice-ui.
const (
	uiChart = "ui"
	uiImage = "sluice-ui"
)

// uiShowsThePipeline loads the pipeline page of the promotion's strategy from the UI's pod,
// through the UI's Service as a browser in the cluster would reach it, and finds on it every
// environment with the dry commit the strategy's status says it runs. The suite reads as an
// anonymous visitor, who sees what system:unauthenticated may read: first, the page is refused to
// it, then the chart README's Role lets it read the namespace.
func (c *Cluster) uiShowsThePipeline(t *testing.T, p *promotion) {
	ctx := context.Background()
	c.checkControllerPods(t, system, release, uiChart, c.Images.Refs[uiImage])
	hidden := c.uiPage(t, system, release+"-ui", "/pipelines", "<main")
	assert.NotContains(t, hidden, p.ns, "an anonymous visitor sees no namespace system:unauthenticated may not read")
	c.anonymousReaders(t, p.ns)
	strategy, err := c.Sluice.PromoterV1alpha1().PromotionStrategies(p.ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, strategy.Status.Environments, len(environments))
	var shown []string
	for _, env := range strategy.Status.Environments {
		require.NotEmpty(t, env.Active.DrySHA, "environment %s runs a dry commit", env.Branch)
		shown = append(shown, fmt.Sprintf(`data-branch="%s" data-active="%s"`, env.Branch, env.Active.DrySHA))
	}
	page := c.uiPage(t, system, release+"-ui", "/pipelines/"+p.ns+"/web", shown...)
	assert.NotContains(t, page, "not installed", "every kind the page reads is installed by the umbrella chart")
}

// anonymousReaders binds, in ns, a Role that reads the Sluice kinds to system:unauthenticated,
// as the UI chart's README says to for anonymous reading.
func (c *Cluster) anonymousReaders(t *testing.T, ns string) {
	t.Helper()
	c.sluiceReaders(t, ns, "sluice-anonymous-readers", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:unauthenticated"})
}

// sluiceReaders binds, in ns, a Role named name that reads the Sluice kinds, to subject.
func (c *Cluster) sluiceReaders(t *testing.T, ns, name string, subject rbacv1.Subject) {
	t.Helper()
	ctx := context.Background()
	groups := []string{"promoter.sluice.dev", "gating.sluice.dev", "health.sluice.dev", "commitstatus.sluice.dev", "rollback.sluice.dev", "scm.sluice.dev"}
	_, err := c.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: groups, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{subject}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// uiPage loads path from the UI through its Service (named service, in ns) until the page
// answers 200 and holds every string of want, and returns the page. The host has no cluster DNS: it reaches the
// Service's address through kube-proxy's rules, as a pod would.
func (c *Cluster) uiPage(t *testing.T, ns, service, path string, want ...string) string {
	t.Helper()
	svc, err := c.Kube.CoreV1().Services(ns).Get(context.Background(), service, metav1.GetOptions{})
	require.NoError(t, err, "the UI's Service")
	require.NotEmpty(t, svc.Spec.Ports)
	url := fmt.Sprintf("http://%s:%d%s", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port, path)
	client := &http.Client{Timeout: 10 * time.Second}
	var page string
	var status int
	testenv.WaitFor(t, time.Minute, func() (bool, error) {
		resp, err := client.Get(url)
		if err != nil {
			return false, nil // kube-proxy may not have programmed the Service yet
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		page, status = string(b), resp.StatusCode
		if err != nil || status != http.StatusOK {
			return false, nil
		}
		for _, w := range want {
			if !strings.Contains(page, w) {
				return false, nil
			}
		}
		return true, nil
	}, "GET %s answers 200 with %q (last: %s)\n%s", url, want, lazy(func() string { return fmt.Sprint(status) }), lazy(func() string { return firstLines(page, 40) }))
	return page
}
