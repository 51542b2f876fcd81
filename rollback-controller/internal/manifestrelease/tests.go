package manifestrelease

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

// runTests applies the selected test objects, waits until each passes or one fails, and always
// deletes them. Problems with the definitions themselves fail the tests: an upgrade is not
// accepted on tests that could not run. The result is logged at INFO.
func (r *Reconciler) runTests(ctx context.Context, mr *rollbackv1.ManifestRelease) (*tested, error) {
	result, message, err := r.test(ctx, mr)
	if err != nil {
		return nil, err
	}
	if result != rollbackv1.TestNotRun {
		r.logger().Info(message, logAttrs(mr, "tests", result)...)
	}
	return &tested{Result: result, Message: message}, nil
}

func (r *Reconciler) test(ctx context.Context, mr *rollbackv1.ManifestRelease) (rollbackv1.TestResult, string, error) {
	t := mr.Spec.Test
	if t == nil || !t.Enable {
		return rollbackv1.TestNotRun, "", nil
	}
	objs, err := r.testObjects(ctx, mr)
	if err != nil {
		var defErr *definitionError
		if errors.As(err, &defErr) {
			return rollbackv1.TestFailed, defErr.Error(), nil
		}
		return "", "", err
	}
	if len(objs) == 0 {
		return rollbackv1.TestNotRun, "", nil
	}
	labels := ownerLabels(mr, true)
	refs := manifest.Inventory(objs)
	timeout := durationOr(mr.Spec.Timeout, 5*time.Minute)
	// A test left by a run that did not finish would report its old result: start clean.
	if err := r.deleteTests(ctx, refs, labels, timeout); err != nil {
		return "", "", err
	}
	defer func() {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_, _ = r.Applier.Delete(cleanup, refs, labels)
	}()
	if err := r.Applier.Apply(ctx, objs, labels); err != nil {
		if refusedByServer(err) {
			return rollbackv1.TestFailed, "the tests could not be created: " + err.Error(), nil
		}
		return "", "", err
	}
	err = r.Applier.Wait(ctx, refs, labels, timeout, judgeTest(r.Applier.Health))
	var bad *apply.FailedError
	var timedOut *apply.TimeoutError
	switch {
	case errors.As(err, &bad):
		return rollbackv1.TestFailed, "test " + bad.Error(), nil
	case errors.As(err, &timedOut):
		return rollbackv1.TestFailed, "tests " + timedOut.Error(), nil
	case err != nil:
		return "", "", err
	}
	return rollbackv1.TestPassed, "tests passed: " + manifest.Names(refs, 3), nil
}

// plannedTests are the test objects an upgrade will create, for the access check; definitions
// that cannot be read are left to the tests, which fail on them.
func (r *Reconciler) plannedTests(ctx context.Context, mr *rollbackv1.ManifestRelease) []manifest.Ref {
	if t := mr.Spec.Test; t == nil || !t.Enable {
		return nil
	}
	objs, err := r.testObjects(ctx, mr)
	if err != nil {
		return nil
	}
	return manifest.Inventory(objs)
}

// definitionError is a test definition that cannot be read or parsed.
type definitionError struct{ msg string }

func (e *definitionError) Error() string { return e.msg }

// testObjects reads the definitions and keeps the objects the filters select.
func (r *Reconciler) testObjects(ctx context.Context, mr *rollbackv1.ManifestRelease) ([]*unstructured.Unstructured, error) {
	t := mr.Spec.Test
	var selected []*unstructured.Unstructured
	scopeObjs := []*unstructured.Unstructured{}
	for _, def := range t.DefinitionsFrom {
		cm, err := r.Kube.CoreV1().ConfigMaps(mr.Namespace).Get(ctx, def.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, &definitionError{fmt.Sprintf("test definitions ConfigMap %q does not exist in namespace %q", def.Name, mr.Namespace)}
		}
		if err != nil {
			return nil, err
		}
		data, ok := cm.Data[def.Key]
		if !ok {
			return nil, &definitionError{fmt.Sprintf("test definitions ConfigMap %q has no key %q", def.Name, def.Key)}
		}
		objs, err := manifest.ParseFile(def.Name+"/"+def.Key, []byte(data))
		if err != nil {
			return nil, &definitionError{"test definitions: " + err.Error()}
		}
		for _, obj := range objs {
			if manifest.Selects(filters(t), obj.GetName(), def.Name) {
				selected = append(selected, obj)
			}
		}
	}
	scope := manifest.ScopeFrom(r.Applier.Mapper, scopeObjs)
	for _, obj := range selected {
		namespaced, err := scope(obj.GroupVersionKind())
		if err != nil {
			return nil, &definitionError{fmt.Sprintf("test %s: %v", manifest.RefOf(obj), err)}
		}
		if !namespaced {
			obj.SetNamespace("")
		} else if obj.GetNamespace() == "" {
			obj.SetNamespace(targetNamespace(mr))
		}
	}
	manifest.Sort(selected)
	return selected, nil
}

// deleteTests deletes earlier test objects and waits until they are gone.
func (r *Reconciler) deleteTests(ctx context.Context, refs []manifest.Ref, labels map[string]string, timeout time.Duration) error {
	if _, err := r.Applier.Delete(ctx, refs, labels); err != nil && !errors.Is(err, apply.ErrNotOwned) {
		return err
	}
	return r.Applier.Wait(ctx, refs, labels, timeout, func(_ manifest.Ref, obj *unstructured.Unstructured) health.Result {
		if obj == nil {
			return health.Result{Status: health.Current}
		}
		return health.Result{Status: health.InProgress, Message: "an earlier run's test is still being deleted"}
	})
}

// judgeTest decides a test: a Job passes when Complete and fails when Failed; other kinds go
// by their health.
func judgeTest(healthOf func(*unstructured.Unstructured) health.Result) apply.Judge {
	return func(ref manifest.Ref, obj *unstructured.Unstructured) health.Result {
		if obj == nil {
			return health.Result{Status: health.InProgress, Message: "not created yet"}
		}
		if ref.Group == "batch" && ref.Kind == "Job" {
			for _, c := range jobConditions(obj) {
				switch {
				case c.Type == "Complete" && c.Status == "True":
					return health.Result{Status: health.Current, Message: "complete"}
				case c.Type == "Failed" && c.Status == "True":
					return health.Result{Status: health.Failed, Message: fmt.Sprintf("Job failed (%s): %s", c.Reason, c.Message)}
				}
			}
			return health.Result{Status: health.InProgress, Message: "Job running"}
		}
		return healthOf(obj)
	}
}

type jobCondition struct{ Type, Status, Reason, Message string }

func jobConditions(obj *unstructured.Unstructured) []jobCondition {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []jobCondition
	for _, c := range raw {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		out = append(out, jobCondition{Type: str("type"), Status: str("status"), Reason: str("reason"), Message: str("message")})
	}
	return out
}

func filters(t *rollbackv1.ReleaseTest) []manifest.Filter {
	out := make([]manifest.Filter, len(t.Filters))
	for i, f := range t.Filters {
		out[i] = manifest.Filter{Name: f.Name, Exclude: f.Exclude}
	}
	return out
}
