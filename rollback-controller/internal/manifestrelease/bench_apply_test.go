package manifestrelease_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/runtime/options"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
	"github.com/sluicehq/sluice/testenv"
)

// fiveHundred renders 500 objects of the kinds a platform component ships (ConfigMaps,
// ServiceAccounts, Services, Roles, RoleBindings), in namespace ns; round changes every
// ConfigMap, so each round writes something.
func fiveHundred(ns string, round int) string {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-%d, namespace: %s}\ndata: {round: %q, key: value-%d}\n", i, ns, fmt.Sprint(round), i)
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa-%d, namespace: %s}\n", i, ns)
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Service\nmetadata: {name: svc-%d, namespace: %s}\nspec: {clusterIP: None, selector: {app: a%d}, ports: [{port: 80}]}\n", i, ns, i)
		fmt.Fprintf(&b, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: role-%d, namespace: %s}\nrules: [{apiGroups: [\"\"], resources: [configmaps], verbs: [get]}]\n", i, ns)
		fmt.Fprintf(&b, "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb-%d, namespace: %s}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: role-%d}\nsubjects: [{kind: ServiceAccount, name: sa-%d, namespace: %s}]\n", i, ns, i, i, ns)
	}
	return b.String()
}

// BenchmarkApply500 applies 500 objects and waits for their health, each op a new round of
// the same set. Rows: internal/apply in-process (what an upgrade does), with the client-side limit
// kubectl has (none: it leaves throttling to the API server) and with the controller's default
// --kube-api-qps 50 / --kube-api-burst 100; a whole ManifestRelease upgrade through the
// controller (source read, snapshot, status, apply, wait), with the limit raised out of the way;
// the same upgrade acting as a ServiceAccount of the namespace (spec.serviceAccountName: every
// request impersonated, and every right checked first with SelfSubjectAccessReviews);
// and the baseline, `kubectl apply --server-side` of the same file against the same API server,
// then `kubectl wait` for the same objects (these kinds are healthy once they exist).
func BenchmarkApply500(b *testing.B) {
	if testing.Short() || env == nil {
		b.Skip("needs the local control plane")
	}
	unlimited := rest.CopyConfig(env.Config)
	unlimited.QPS = -1
	defaults := rest.CopyConfig(env.Config)
	defaults.QPS, defaults.Burst = 50, 100
	b.Run("sluice-internal-apply-and-wait-unthrottled", func(b *testing.B) { benchApplyAndWait(b, unlimited) })
	b.Run("sluice-internal-apply-and-wait-qps-50-burst-100", func(b *testing.B) { benchApplyAndWait(b, defaults) })
	b.Run("sluice-manifestrelease-upgrade-qps-1000", func(b *testing.B) { benchReleaseUpgrade(b, unlimited, "") })
	b.Run("sluice-manifestrelease-upgrade-impersonated-qps-1000", func(b *testing.B) { benchReleaseUpgrade(b, unlimited, "releaser") })
	b.Run("baseline-kubectl-apply-server-side-and-wait", benchKubectlApply)
}

func benchApplyAndWait(b *testing.B, cfg *rest.Config) {
	ctx := context.Background()
	ns := benchNamespace(b, "apply")
	applier := newBenchApplier(b, cfg)
	labels := map[string]string{rollbackv1.ReleaseNameLabel: "bench", rollbackv1.ReleaseNamespaceLabel: ns}
	round := 0
	for b.Loop() {
		round++
		objs, err := manifest.ParseFile("bench.yaml", []byte(fiveHundred(ns, round)))
		must(b, err)
		manifest.Sort(objs)
		must(b, applier.Apply(ctx, objs, labels))
		must(b, applier.Wait(ctx, manifest.Inventory(objs), labels, time.Minute, nil))
	}
}

func benchReleaseUpgrade(b *testing.B, cfg *rest.Config, serviceAccount string) {
	ctx := context.Background()
	ns := benchNamespace(b, "release")
	if serviceAccount != "" {
		benchTenant(b, ns, serviceAccount)
	}
	startControllerWith(b, env.Config, ns, func(o *options.Options) { o.KubeAPIQPS, o.KubeAPIBurst = 1000, 2000 }, nil)
	kube := kubernetes.NewForConfigOrDie(cfg)
	releases := sluice.NewForConfigOrDie(cfg).RollbackV1alpha1().ManifestReleases(ns)
	round := 0
	for b.Loop() {
		round++
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "src", Namespace: ns}, Data: map[string]string{"all.yaml": fiveHundred(ns, round)}}
		if round == 1 {
			_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
			must(b, err)
			_, err = releases.Create(ctx, &rollbackv1.ManifestRelease{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns},
				Spec: rollbackv1.ManifestReleaseSpec{Source: configMapSource("src"), Version: "r1", ServiceAccountName: serviceAccount}}, metav1.CreateOptions{})
			must(b, err)
		} else {
			_, err := kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			must(b, err)
			_, err = testenv.Update(ctx, releases, "bench", func(mr *rollbackv1.ManifestRelease) { mr.Spec.Version = fmt.Sprintf("r%d", round) })
			must(b, err)
		}
		waitDeployed(b, ns, "bench", fmt.Sprintf("r%d", round))
	}
}

// benchTenant lets ServiceAccount name of ns apply fiveHundred's kinds and write snapshots.
func benchTenant(b *testing.B, ns, name string) {
	ctx := context.Background()
	_, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	must(b, err)
	_, err = env.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"", "rbac.authorization.k8s.io"}, Resources: []string{"configmaps", "serviceaccounts", "services", "roles", "rolebindings"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "delete"}},
	}}, metav1.CreateOptions{})
	must(b, err)
	_, err = env.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}}, metav1.CreateOptions{})
	must(b, err)
}

func benchKubectlApply(b *testing.B) {
	ns := benchNamespace(b, "kubectl")
	kubectl, err := testenv.Tool("kubectl")
	must(b, err)
	file := filepath.Join(b.TempDir(), "all.yaml")
	round := 0
	for b.Loop() {
		round++
		b.StopTimer()
		must(b, os.WriteFile(file, []byte(fiveHundred(ns, round)), 0o644))
		b.StartTimer()
		runKubectl(b, kubectl, "apply", "--server-side", "--field-manager=bench", "-f", file)
		// What the release waits for, its health: these kinds are healthy once they exist.
		runKubectl(b, kubectl, "wait", "--for=create", "--timeout=60s", "-f", file)
	}
}

func runKubectl(b *testing.B, kubectl string, args ...string) {
	b.Helper()
	cmd := exec.Command(kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("kubectl %s: %v\n%s", args[0], err, out)
	}
}

func newBenchApplier(b *testing.B, cfg *rest.Config) *apply.Applier {
	kube := kubernetes.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))
	return &apply.Applier{Dynamic: dynamic.NewForConfigOrDie(cfg), Mapper: mapper, FieldManager: "bench",
		Health: func(obj *unstructured.Unstructured) health.Result { return health.Kstatus(obj) }}
}

func benchNamespace(b *testing.B, prefix string) string {
	b.Helper()
	ns := fmt.Sprintf("bench-%s-%d", prefix, time.Now().UnixNano()%1_000_000_000)
	_, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must(b, err)
	return ns
}

func waitDeployed(b *testing.B, ns, name, version string) {
	b.Helper()
	err := testenv.Wait(context.Background(), 5*time.Minute, func(ctx context.Context) (bool, error) {
		mr, err := env.Sluice.RollbackV1alpha1().ManifestReleases(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return mr.Status.DeployedVersion == version && mr.Status.Operation == nil, nil
	})
	must(b, err)
}

func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
