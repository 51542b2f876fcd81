package flux

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/testenv"
)

// ApplyTimeout is how long the waits here give the real controllers: a fetch and an apply take
// well under a second on an idle machine, but a loaded CI machine can be far slower.
const ApplyTimeout = 2 * time.Minute

// GitRepositorySpec is what a test chooses of a GitRepository.
type GitRepositorySpec struct {
	// URL is the repository, such as a gittest server's http://127.0.0.1:PORT/NAME.
	URL    string
	Branch string
	// Interval is how often source-controller fetches; a test of a hold wants seconds.
	Interval time.Duration
	// Annotations, such as the gates that hold the source, are set at creation.
	Annotations map[string]string
}

// CreateGitRepository creates a GitRepository in namespace and returns it as created.
func CreateGitRepository(t testing.TB, env *testenv.Env, namespace, name string, spec GitRepositorySpec) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1",
		"kind":       "GitRepository",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"url":      spec.URL,
			"interval": spec.Interval.String(),
			"timeout":  "60s",
			"ref":      map[string]any{"branch": spec.Branch},
		},
	}}
	obj.SetAnnotations(spec.Annotations)
	return create(t, env, obj)
}

// KustomizationSpec is what a test chooses of a Kustomization.
type KustomizationSpec struct {
	// GitRepository names the source, in the Kustomization's namespace.
	GitRepository string
	// Path is the folder in the repository to apply; empty means its root.
	Path string
	// TargetNamespace, when set, is where the objects go.
	TargetNamespace string
	// Interval is how often kustomize-controller applies again (and corrects drift).
	Interval time.Duration
	// Wait makes kustomize-controller wait for the applied objects to be ready before it reports
	// the revision applied.
	Wait bool
	// Annotations, such as the gates that hold the Kustomization, are set at creation.
	Annotations map[string]string
}

// CreateKustomization creates a Kustomization with pruning on and returns it as created.
func CreateKustomization(t testing.TB, env *testenv.Env, namespace, name string, spec KustomizationSpec) *unstructured.Unstructured {
	t.Helper()
	path := spec.Path
	if path == "" {
		path = "./"
	}
	s := map[string]any{
		"interval":  spec.Interval.String(),
		"timeout":   "60s",
		"path":      path,
		"prune":     true,
		"wait":      spec.Wait,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": spec.GitRepository},
	}
	if spec.TargetNamespace != "" {
		s["targetNamespace"] = spec.TargetNamespace
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       s,
	}}
	obj.SetAnnotations(spec.Annotations)
	return create(t, env, obj)
}

func create(t testing.TB, env *testenv.Env, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	gvr := GitRepositories
	if obj.GetKind() == "Kustomization" {
		gvr = Kustomizations
	}
	out, err := env.Dynamic.Resource(gvr).Namespace(obj.GetNamespace()).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return out
}

// Revision is how Flux writes a commit of a branch in its statuses: "main@sha1:<sha>".
func Revision(branch, sha string) string { return branch + "@sha1:" + sha }

// WaitForApplied waits until kustomize-controller reports revision (see Revision) as applied to
// the Kustomization: status.lastAppliedRevision, with Ready true for it. It returns the
// Kustomization and fails the test, with the status it saw last, if ApplyTimeout passes first.
func WaitForApplied(t testing.TB, env *testenv.Env, namespace, name, revision string) *unstructured.Unstructured {
	t.Helper()
	return WaitForStatus(t, env, Kustomizations, namespace, name, func(status map[string]any) bool {
		applied, _ := status["lastAppliedRevision"].(string)
		return applied == revision && ReadyFor(status, revision)
	}, "revision %s applied", revision)
}

// WaitForFetched waits until source-controller's artifact of the GitRepository is revision.
func WaitForFetched(t testing.TB, env *testenv.Env, namespace, name, revision string) *unstructured.Unstructured {
	t.Helper()
	return WaitForStatus(t, env, GitRepositories, namespace, name, func(status map[string]any) bool {
		artifact, _ := status["artifact"].(map[string]any)
		got, _ := artifact["revision"].(string)
		return got == revision
	}, "revision %s fetched", revision)
}

// ReadyFor says whether status has Ready true with a message naming revision, as Flux writes it
// once it has reconciled that revision.
func ReadyFor(status map[string]any, revision string) bool {
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			msg, _ := m["message"].(string)
			return m["status"] == "True" && strings.Contains(msg, revision)
		}
	}
	return false
}

// WaitForStatus polls the object's status until cond holds, failing the test with the status
// it saw last after ApplyTimeout.
func WaitForStatus(t testing.TB, env *testenv.Env, gvr schema.GroupVersionResource, namespace, name string, cond func(map[string]any) bool, what string, args ...any) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	err := testenv.Wait(context.Background(), ApplyTimeout, func(ctx context.Context) (bool, error) {
		obj, err := env.Dynamic.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = obj
		status, _ := obj.Object["status"].(map[string]any)
		return cond(status), nil
	})
	if err != nil {
		var status any
		if last != nil {
			status = last.Object["status"]
		}
		t.Fatalf("%s/%s: %s: %v; last status: %v", namespace, name, fmt.Sprintf(what, args...), err, status)
	}
	return last
}

// RequestReconcile asks the controller of the object to reconcile it now, as `flux reconcile`
// does: it sets the reconcile.fluxcd.io/requestedAt annotation to a new value.
func RequestReconcile(t testing.TB, env *testenv.Env, gvr schema.GroupVersionResource, namespace, name string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := env.Dynamic.Resource(gvr).Namespace(namespace).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("request a reconcile of %s %s/%s: %v", gvr.Resource, namespace, name, err)
	}
}
