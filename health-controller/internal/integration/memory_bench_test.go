package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/health/library"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
	"github.com/sluicehq/sluice/testenv"
)

const benchObjects = 10_000

var (
	benchOnce sync.Once
	benchNS   string
	benchErr  error
)

// benchDeployments creates, once per process, 10,000 Deployments with the status a deployment
// controller writes, so each carries the managedFields of two writers, as in a real cluster.
func benchDeployments(b *testing.B) string {
	b.Helper()
	benchOnce.Do(func() {
		benchNS = "bench-memory"
		cfg := rest.CopyConfig(env.Config)
		cfg.QPS, cfg.Burst = 2000, 4000
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			benchErr = err
			return
		}
		ctx := context.Background()
		if _, benchErr = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}, metav1.CreateOptions{}); benchErr != nil {
			return
		}
		g, ctx := errgroup.WithContext(ctx)
		g.SetLimit(16)
		for i := range benchObjects {
			g.Go(func() error { return createBenchDeployment(ctx, kube, benchNS, i) })
		}
		benchErr = g.Wait()
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchNS
}

func createBenchDeployment(ctx context.Context, kube kubernetes.Interface, ns string, i int) error {
	replicas := int32(3)
	labels := map[string]string{"app.kubernetes.io/name": fmt.Sprintf("svc-%d", i), "app.kubernetes.io/part-of": "shop", "team": "payments"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%05d", i), Namespace: ns, Labels: labels,
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "4"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: fmt.Sprintf("ghcr.io/example/svc-%d:1.4.2", i),
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Env:   []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "REGION", Value: "eu-west-1"}},
				}}},
			},
		},
	}
	created, err := kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{FieldManager: "flux"})
	if err != nil {
		return err
	}
	created.Status = appsv1.DeploymentStatus{
		ObservedGeneration: created.Generation, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: "ReplicaSet has successfully progressed."},
		},
	}
	_, err = kube.AppsV1().Deployments(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
	return err
}

// BenchmarkControllerRSS is the resident memory of the health-controller process (built from
// cmd/health-controller and run against the test control plane) once a HealthCheck covers
// 10,000 Deployments, read from /proc/<pid>/status after the HealthCheck reports all of them.
// The baseline is the same binary, same run, with a HealthCheck of one Deployment in another
// namespace, so its watch holds one object.
func BenchmarkControllerRSS(b *testing.B) {
	testenv.SkipIfShort(b)
	ns := benchDeployments(b)
	bin := filepath.Join(b.TempDir(), "health-controller")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/health-controller")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	idleNS := "bench-idle"
	if _, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: idleNS}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := createBenchDeployment(context.Background(), env.Kube, idleNS, 0); err != nil {
		b.Fatal(err)
	}

	b.Run("baseline-1-watched-deployment", func(b *testing.B) { measureRSS(b, bin, idleNS, 1) })
	b.Run("10000-watched-deployments", func(b *testing.B) { measureRSS(b, bin, ns, benchObjects) })
}

func measureRSS(b *testing.B, bin, ns string, want int32) {
	ctx := context.Background()
	hc := &healthv1alpha1.HealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: ns},
		Spec: healthv1alpha1.HealthCheckSpec{Targets: []healthv1alpha1.Target{{Selector: &healthv1alpha1.KindSelector{
			APIVersion: "apps/v1", Kind: "Deployment"}}}},
	}
	if _, err := env.Sluice.HealthV1alpha1().HealthChecks(ns).Create(ctx, hc, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Sluice.HealthV1alpha1().HealthChecks(ns).Delete(ctx, "all", metav1.DeleteOptions{}) }()

	var m procMemory
	for b.Loop() {
		metricsAddr := freeAddr(b)
		cmd := exec.Command(bin, "--kubeconfig", env.Kubeconfig, "--namespace", ns, "--leader-elect=false",
			"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", freeAddr(b), "--library-configmap-name=")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		err := testenv.Wait(ctx, 5*time.Minute, func(ctx context.Context) (bool, error) {
			got, err := env.Sluice.HealthV1alpha1().HealthChecks(ns).Get(ctx, "all", metav1.GetOptions{})
			return err == nil && got.Status.Counts.Total == want && got.Status.Counts.Current == want, nil
		})
		if err == nil {
			// Let the evaluation's garbage be collected, as it would between events.
			time.Sleep(5 * time.Second)
			m, err = readProcMemory(cmd.Process.Pid)
		}
		if err == nil {
			m.heapInUse, err = heapInUseOf(metricsAddr)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(m.rss/(1<<20), "RSS-MiB")
	b.ReportMetric(m.peak/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(m.anon/(1<<20), "anon-RSS-MiB")
	b.ReportMetric(m.file/(1<<20), "file-RSS-MiB")
	b.ReportMetric(m.heapInUse/(1<<20), "heap-inuse-MiB")
}

// procMemory is a process's memory, in bytes: VmRSS, VmHWM (the peak), and the parts of VmRSS
// that are its own (RssAnon) and pages of files it maps, mostly its executable (RssFile); and
// the Go heap in use, from its /metrics.
type procMemory struct{ rss, peak, anon, file, heapInUse float64 }

func readProcMemory(pid int) (procMemory, error) {
	var m procMemory
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			m.rss = kb * 1024
		case "VmHWM:":
			m.peak = kb * 1024
		case "RssAnon:":
			m.anon = kb * 1024
		case "RssFile:":
			m.file = kb * 1024
		}
	}
	return m, sc.Err()
}

func heapInUseOf(addr string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if value, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			return strconv.ParseFloat(value, 64)
		}
	}
	return 0, fmt.Errorf("no go_memstats_heap_inuse_bytes in the /metrics of %s", addr)
}

func freeAddr(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// BenchmarkWatchCacheMemory is the Go heap a watch of the 10,000 Deployments holds, in this
// process: keeping the fields kstatus reads, as the controller does for Deployments, and keeping
// all but managedFields, against the baseline of caching objects as they come.
func BenchmarkWatchCacheMemory(b *testing.B) {
	testenv.SkipIfShort(b)
	ns := benchDeployments(b)
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 200, 400
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	compiler, err := cel.NewCompiler()
	if err != nil {
		b.Fatal(err)
	}
	builtin, err := library.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	resolver, err := health.Resolve(nil, nil, builtin)
	if err != nil {
		b.Fatal(err)
	}
	kstatusReads := dynamicwatch.FieldsOf(health.NewEvaluator(compiler, resolver).Reads(appsv1.SchemeGroupVersion.WithKind("Deployment"))...)
	for _, c := range []struct {
		name      string
		transform func(any) (any, error)
		fields    dynamicwatch.Fields
	}{
		{"fields-kstatus-reads", dynamicwatch.StripManagedFields, kstatusReads},
		{"strip-managed-fields", dynamicwatch.StripManagedFields, dynamicwatch.All},
		{"baseline-keep-all", dynamicwatch.KeepAll, dynamicwatch.All},
	} {
		b.Run(c.name, func(b *testing.B) {
			var perObject, total float64
			for b.Loop() {
				before := heapInUse()
				w := dynamicwatch.New(client, dynamicwatch.Options{Transform: c.transform})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { _ = w.Run(ctx); close(done) }()
				scope := dynamicwatch.Scope{Resource: deployments, Namespace: ns}
				w.AddNeeds("bench", dynamicwatch.Need{Scope: scope, Fields: c.fields})
				err := testenv.Wait(ctx, 5*time.Minute, func(context.Context) (bool, error) {
					ok, err := w.State(scope)
					return ok, err
				})
				if err != nil {
					b.Fatal(err)
				}
				total = heapInUse() - before
				perObject = total / benchObjects
				runtime.KeepAlive(w)
				cancel()
				<-done
			}
			b.ReportMetric(total/(1<<20), "heap-MiB")
			b.ReportMetric(perObject, "heap-B/object")
		})
	}
}

func heapInUse() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc)
}
