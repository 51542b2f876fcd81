package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
)

// releaseObjects are the ConfigMaps every version of a release applies; a version is whole when
// all of them carry its number.
var releaseObjects = []string{"a", "b", "c"}

// releaseTestTimeout bounds a release's tests: a failing version's test is a Job that nothing
// completes (the control plane runs no Job controller), so it fails at this timeout.
const releaseTestTimeout = 20 * time.Second

// releaseCount: one ManifestRelease per ten strategies, at least one.
func releaseCount(strategies int) int { return max(1, strategies/10) }

// release is one ManifestRelease of the workload, upgraded every minute.
type release struct {
	name string
	// version is the last version written to the source; foreignRV the resourceVersion of the
	// object beside the release that it must never touch.
	mu        sync.Mutex
	version   int
	foreignRV string
}

func (rl *release) object(o string) string { return rl.name + "-" + o }
func (rl *release) foreign() string        { return rl.name + "-foreign" }

// releaseFailing is the seeded rule of which versions fail their tests: one in three.
func releaseFailing(seed uint64, name string, version int) bool {
	h := uint64(version)
	for _, c := range name {
		h = h*31 + uint64(c)
	}
	return version > 1 && rand.New(rand.NewPCG(seed, h)).IntN(3) == 0
}

// releaseManifests are version v's objects; with foreign, they also name the object beside the
// release, which the release did not create: the upgrade must stop before applying anything.
func releaseManifests(rl *release, v int, foreign bool) string {
	var docs []string
	for _, o := range releaseObjects {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  version: %q\n", rl.object(o), fmt.Sprint(v)))
	}
	if foreign {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  owner: the release\n", rl.foreign()))
	}
	return strings.Join(docs, "---\n")
}

// releaseTests pass (a ConfigMap, healthy at once) or fail (a Job nobody completes).
func releaseTests(rl *release, fail bool) string {
	doc := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-check\ndata:\n  checks: %s\n", rl.name, rl.name)
	if fail {
		doc += fmt.Sprintf("---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: %s-smoke\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: smoke\n          image: busybox\n", rl.name)
	}
	return doc
}

// releaser is the ServiceAccount the releases act as (impersonated): it may read and write
// ConfigMaps and Jobs, and write the snapshot Secrets, in the soak's namespace, as a tenant.
const releaser = "releaser"

func (w *workload) createReleaser(ctx context.Context) error {
	if _, err := w.kube.CoreV1().ServiceAccounts(w.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: releaser}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	if _, err := w.kube.RbacV1().Roles(w.ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: releaser}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "delete"}},
	}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := w.kube.RbacV1().RoleBindings(w.ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: releaser},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: releaser},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: releaser, Namespace: w.ns}}}, metav1.CreateOptions{})
	return err
}

// setUpReleases makes the releases, their sources and tests, and the object beside each.
func (w *workload) setUpReleases(ctx context.Context, n int) error {
	if err := w.createReleaser(ctx); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		rl := &release{name: fmt.Sprintf("rel-%02d", i), version: 1}
		cms := w.kube.CoreV1().ConfigMaps(w.ns)
		foreign, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: rl.foreign()}, Data: map[string]string{"owner": "soak"}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		rl.foreignRV = foreign.ResourceVersion
		for _, cm := range []*corev1.ConfigMap{
			{ObjectMeta: metav1.ObjectMeta{Name: rl.name + "-tests"}, Data: map[string]string{"tests": releaseTests(rl, false)}},
			{ObjectMeta: metav1.ObjectMeta{Name: rl.name + "-source"}, Data: map[string]string{"app.yaml": releaseManifests(rl, 1, false)}},
		} {
			if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		_, err = w.sluice.RollbackV1alpha1().ManifestReleases(w.ns).Create(ctx, &rollbackv1.ManifestRelease{
			ObjectMeta: metav1.ObjectMeta{Name: rl.name},
			Spec: rollbackv1.ManifestReleaseSpec{
				ServiceAccountName: releaser,
				Source:             rollbackv1.ManifestSource{ConfigMaps: []rollbackv1.ConfigMapReference{{Name: rl.name + "-source"}}},
				Timeout:            &metav1.Duration{Duration: releaseTestTimeout},
				Test: &rollbackv1.ReleaseTest{Enable: true, DefinitionsFrom: []rollbackv1.TestDefinitionReference{
					{Kind: "ConfigMap", Name: rl.name + "-tests", Key: "tests"}}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		w.releases = append(w.releases, rl)
	}
	return nil
}

// upgradeRelease writes the next version of one release: its tests first (failing by the seeded
// rule), then its manifests; one upgrade in four also names the object beside the release.
func (w *workload) upgradeRelease(ctx context.Context, rl *release, healthy bool) error {
	rl.mu.Lock()
	v := rl.version + 1
	rl.mu.Unlock()
	fail := !healthy && releaseFailing(w.seed, rl.name, v)
	foreign := !healthy && v%4 == 0
	cms := w.kube.CoreV1().ConfigMaps(w.ns)
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: rl.name + "-tests"}, Data: map[string]string{"tests": releaseTests(rl, fail)}},
		{ObjectMeta: metav1.ObjectMeta{Name: rl.name + "-source"}, Data: map[string]string{"app.yaml": releaseManifests(rl, v, foreign)}},
	} {
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	rl.mu.Lock()
	rl.version = v
	rl.mu.Unlock()
	// Read the source now, as `flux reconcile` asks; the interval would take up to a minute.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, rollbackv1.RequestedAtAnnotation, time.Now().Format(time.RFC3339Nano))
	if _, err := w.sluice.RollbackV1alpha1().ManifestReleases(w.ns).Patch(ctx, rl.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return err
	}
	w.ops.releaseUpgrades.Add(1)
	if fail {
		w.ops.releaseFailingTests.Add(1)
	}
	if foreign {
		w.ops.releaseForeign.Add(1)
	}
	return nil
}

// wholeVersion reads a release's objects between two reads of its status: with no operation
// under way and the status the same both times, they must all be there and carry one version
// (invariant 8). ok is false when nothing can be judged (an operation, a status that moved).
func (c *checker) wholeVersion(ctx context.Context, rl *release) (versions map[string]string, ok bool, err error) {
	mrs := c.w.sluice.RollbackV1alpha1().ManifestReleases(c.w.ns)
	before, err := mrs.Get(ctx, rl.name, metav1.GetOptions{})
	if err != nil || before.Status.Operation != nil || before.Status.DeployedDigest == "" {
		return nil, false, err
	}
	selector := labels.SelectorFromSet(labels.Set{rollbackv1.ReleaseNameLabel: rl.name}).String()
	list, err := c.w.kube.CoreV1().ConfigMaps(c.w.ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, false, err
	}
	after, err := mrs.Get(ctx, rl.name, metav1.GetOptions{})
	if err != nil || after.ResourceVersion != before.ResourceVersion {
		return nil, false, err
	}
	versions = map[string]string{}
	for _, cm := range list.Items {
		if _, test := cm.Labels[rollbackv1.TestLabel]; test || cm.Name == rl.name+"-check" {
			continue
		}
		versions[cm.Name] = cm.Data["version"]
	}
	return versions, true, nil
}

// checkReleases checks invariant 8 on every release once: one whole version while nothing is
// under way, and the object beside it untouched.
func (c *checker) checkReleases(ctx context.Context) error {
	for _, rl := range c.w.releases {
		if err := c.foreignUntouched(ctx, rl); err != nil {
			return err
		}
		versions, ok, err := c.wholeVersion(ctx, rl)
		if err != nil || !ok {
			return err
		}
		c.count(8, 1)
		if why := notWhole(rl, versions); why != "" {
			c.violate(Violation{8, rl.name, why})
		}
	}
	return nil
}

// notWhole says how a release's objects are not one whole version, or "".
func notWhole(rl *release, versions map[string]string) string {
	seen := map[string]bool{}
	for _, o := range releaseObjects {
		v, ok := versions[rl.object(o)]
		if !ok {
			return fmt.Sprintf("%s is missing while no operation is under way (objects: %v)", rl.object(o), versions)
		}
		seen[v] = true
	}
	if len(seen) > 1 {
		var vs []string
		for v := range seen {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		return fmt.Sprintf("two versions half-applied while no operation is under way: %v (%v)", vs, versions)
	}
	return ""
}

func (c *checker) foreignUntouched(ctx context.Context, rl *release) error {
	cm, err := c.w.kube.CoreV1().ConfigMaps(c.w.ns).Get(ctx, rl.foreign(), metav1.GetOptions{})
	c.count(8, 1)
	switch {
	case apierrors.IsNotFound(err):
		c.violate(Violation{8, rl.name, fmt.Sprintf("%s, which the release did not create, was deleted", rl.foreign())})
		return nil
	case err != nil:
		return err
	case cm.ResourceVersion != rl.foreignRV:
		c.violate(Violation{8, rl.name, fmt.Sprintf("%s, which the release did not create, was changed: %v", rl.foreign(), cm.Data)})
	}
	return nil
}

// upgradeNext upgrades the releases in turn, so that each one is upgraded every minute.
func (r *soakRun) upgradeNext() func(context.Context) error {
	next := 0
	return func(ctx context.Context) error {
		if len(r.w.releases) == 0 {
			return nil
		}
		rl := r.w.releases[next%len(r.w.releases)]
		next++
		return r.w.upgradeRelease(ctx, rl, false)
	}
}

// releasesConverged: every release runs its last version, whole, with nothing under way.
func (r *soakRun) releasesConverged(ctx context.Context) (bool, string) {
	for _, rl := range r.w.releases {
		versions, ok, err := r.check.wholeVersion(ctx, rl)
		if err != nil || !ok {
			return false, fmt.Sprintf("%s has an operation under way (%v)", rl.name, err)
		}
		rl.mu.Lock()
		want := fmt.Sprint(rl.version)
		rl.mu.Unlock()
		for _, o := range releaseObjects {
			if versions[rl.object(o)] != want {
				return false, fmt.Sprintf("%s runs %v, not its last version %s", rl.name, versions, want)
			}
		}
	}
	return true, ""
}
