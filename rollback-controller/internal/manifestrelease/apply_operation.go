package manifestrelease

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

// applyVersion applies the objects of a version, at At, from which spec.timeout counts. A
// refusal by the API server is a failure of the version; other errors are returned.
func (a applyVersion) do(ctx context.Context, _ *Reconciler, as *identity, mr *rollbackv1.ManifestRelease) (findings, error) {
	if err := as.Applier.Apply(ctx, a.Objects, ownerLabels(mr, false)); err != nil {
		if refusedByServer(err) {
			return findings{Applied: &applied{Failure: &failed{Reason: ReasonApplyFailed, Message: "apply: " + err.Error()}}}, nil
		}
		return findings{}, err
	}
	return findings{Applied: &applied{At: a.At}}, nil
}

// awaitVersion looks once, at Now, at the health of the version applied at Since: an object
// that failed, or spec.timeout run out, fails the version.
func (a awaitVersion) do(ctx context.Context, _ *Reconciler, as *identity, mr *rollbackv1.ManifestRelease) (findings, error) {
	done, bad, err := awaitHealth(ctx, as, mr, a.Objects, a.Since, a.Now)
	v := &applied{At: a.Since, Healthy: done && bad == nil}
	if bad != nil {
		v.Failure = &failed{Reason: ReasonHealthCheckFailed, Message: "health: " + bad.Error()}
	}
	return findings{Applied: v, Awaiting: !done && err == nil}, err
}

// awaitHealth looks once, at now, at the health of objs, applied at since. It is done when every
// one is healthy, or, with the reason as unhealthy, when one failed or spec.timeout ran out;
// otherwise it is to look again later. Other errors are returned.
func awaitHealth(ctx context.Context, as *identity, mr *rollbackv1.ManifestRelease, objs []*unstructured.Unstructured, since, now time.Time) (done bool, unhealthy, err error) {
	timeout := durationOr(mr.Spec.Timeout, 5*time.Minute)
	pending, err := as.Applier.Pending(ctx, manifest.Inventory(objs), ownerLabels(mr, false), nil)
	var bad *apply.FailedError
	switch {
	case errors.As(err, &bad):
		return true, err, nil
	case err != nil:
		return false, nil, err
	case len(pending) == 0:
		return true, nil, nil
	case !now.Before(since.Add(timeout)):
		return true, &apply.TimeoutError{After: timeout, Pending: pending}, nil
	}
	return false, nil, nil
}

// pruneStale deletes what the upgraded version dropped (Stale), keeping CRDs that still have
// objects, then the snapshots beyond the history limit. It does so before the status says the
// upgrade is done, so that whoever sees it done sees the history pruned too; the operation's From
// stays in case a crash here sends the upgrade back to a rollback.
func (a pruneStale) do(ctx context.Context, r *Reconciler, as *identity, mr *rollbackv1.ManifestRelease) (findings, error) {
	op := mr.Status.Operation
	p := &pruned{}
	if pruneEnabled(mr) && len(a.Stale) > 0 {
		if err := pruneObjects(ctx, as, op.Version, a.Stale, ownerLabels(mr, false), p); err != nil {
			return findings{}, err
		}
	}
	var err error
	if p.KeptNumbers, p.Foreign, err = pruneSnapshots(ctx, as, mr, op.Number, op.From); err != nil {
		return findings{}, err
	}
	return findings{Pruned: p}, nil
}

// pruneObjects deletes stale objects, except CRDs that still have objects. What it keeps stays
// in the inventory, and is announced.
func pruneObjects(ctx context.Context, as *identity, version string, stale []manifest.Ref, labels map[string]string, p *pruned) error {
	live, err := as.Applier.CRDStates(ctx, manifest.CRDsToInspect(nil, stale), stale)
	if err != nil {
		return err
	}
	var deletable []manifest.Ref
	blocked := map[string]bool{}
	for _, b := range manifest.CheckCRDs("pruning after the upgrade to "+version, nil, stale, live) {
		blocked[b.Object.ID()] = true
		p.Events = append(p.Events, warning(b.Reason, b.Message))
	}
	for _, ref := range stale {
		if blocked[ref.ID()] {
			p.Kept = append(p.Kept, ref)
		} else {
			deletable = append(deletable, ref)
		}
	}
	deleted, err := as.Applier.Delete(ctx, deletable, labels)
	if len(deleted) > 0 {
		p.Message = fmt.Sprintf("; pruned %d objects", len(deleted))
	}
	if err != nil {
		p.Events = append(p.Events, warning(ReasonPruneFailed, err.Error()))
		p.Kept = append(p.Kept, notIn(deletable, deleted)...)
	}
	if len(p.Kept) > 0 {
		p.Message += fmt.Sprintf("; kept %d objects it no longer has (see Events): %s", len(p.Kept), manifest.Names(p.Kept, 3))
	}
	return nil
}

// pruneSnapshots keeps the newest historyLimit snapshots the history knows, and always those
// named; it deletes the others by name, and returns the numbers kept. A Secret outside the
// digest chain under a number it deletes is left alone, and returned as foreign.
func pruneSnapshots(ctx context.Context, as *identity, mr *rollbackv1.ManifestRelease, always ...int64) (kept []int64, foreign, err error) {
	limit := 5
	if mr.Spec.HistoryLimit != nil {
		limit = int(*mr.Spec.HistoryLimit)
	}
	known := knownNumbers(mr.Status, always...)
	keep := slices.Clone(always)
	keep = append(keep, known[max(0, len(known)-limit):]...)
	for _, n := range known {
		if slices.Contains(keep, n) {
			continue
		}
		err := as.Snapshots.Delete(ctx, mr.Namespace, mr.Name, n)
		switch {
		case errors.Is(err, snapshot.ErrNotOwned):
			foreign = err
		case err != nil && !errors.Is(err, snapshot.ErrIncomplete):
			return nil, nil, err
		}
	}
	return keep, foreign, nil
}

// applyRollback applies, at At, the snapshot a rollback goes back to, and deletes what only
// the version left behind had (Stale). A refusal by the API server is a finding; other errors
// are returned, and the rollback is resumed.
func (a applyRollback) do(ctx context.Context, _ *Reconciler, as *identity, mr *rollbackv1.ManifestRelease) (findings, error) {
	labels := ownerLabels(mr, false)
	if err := as.Applier.Apply(ctx, a.Objects, labels); err != nil {
		if refusedByServer(err) {
			return findings{Rolled: &rolled{Refused: err}}, nil
		}
		return findings{}, err
	}
	if _, err := as.Applier.Delete(ctx, a.Stale, labels); err != nil {
		op := mr.Status.Operation
		return findings{}, fmt.Errorf("the rollback to %s: delete what only %s had: %w", describe(op.Version, op.Number), describe("the version left", op.From), err)
	}
	return findings{Rolled: &rolled{At: a.At}}, nil
}

// awaitRollback looks once, at Now, at the health of the version rolled back to at Since.
// Objects that do not become healthy do not stop the rollback: what it reports says so.
func (a awaitRollback) do(ctx context.Context, _ *Reconciler, as *identity, mr *rollbackv1.ManifestRelease) (findings, error) {
	done, bad, err := awaitHealth(ctx, as, mr, a.Objects, a.Since, a.Now)
	rb := &rolled{At: a.Since, Settled: done}
	if bad != nil {
		rb.HealthNote = "; but it is not healthy: " + bad.Error()
	}
	return findings{Rolled: rb, Awaiting: !done && err == nil}, err
}

// refusedByServer tells a version the API server refuses (invalid, forbidden, unknown kind) from
// a server that cannot be reached.
func refusedByServer(err error) bool {
	if meta.IsNoMatchError(err) {
		return true
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := int(status.Status().Code)
	return code >= 400 && code < 500 && code != http.StatusTooManyRequests && code != http.StatusRequestTimeout
}

// unhealthy reports whether err is about the objects' health rather than reading them.
func unhealthy(err error) bool {
	var timeout *apply.TimeoutError
	var bad *apply.FailedError
	return errors.As(err, &timeout) || errors.As(err, &bad)
}

// runTests applies the selected test objects, waits until each passes or one fails, and always
// deletes them. Problems with the definitions themselves fail the tests: an upgrade is not
// accepted on tests that could not run. The result is logged at INFO.
func (runTests) do(ctx context.Context, r *Reconciler, as *identity, mr *rollbackv1.ManifestRelease) (findings, error) {
	result, message, err := runTestObjects(ctx, as, mr)
	if err != nil {
		return findings{}, err
	}
	if result != rollbackv1.TestNotRun {
		r.logger().Info(message, logAttrs(mr, "tests", result)...)
	}
	return findings{Tested: &tested{Result: result, Message: message}}, nil
}

func runTestObjects(ctx context.Context, as *identity, mr *rollbackv1.ManifestRelease) (rollbackv1.TestResult, string, error) {
	t := mr.Spec.Test
	if t == nil || !t.Enable {
		return rollbackv1.TestNotRun, "", nil
	}
	objs, err := testObjects(ctx, as.Kube, as.Applier.Mapper, mr)
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
	if err := deleteTests(ctx, as, refs, labels, timeout); err != nil {
		return "", "", err
	}
	defer func() {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_, _ = as.Applier.Delete(cleanup, refs, labels)
	}()
	if err := as.Applier.Apply(ctx, objs, labels); err != nil {
		if refusedByServer(err) {
			return rollbackv1.TestFailed, "the tests could not be created: " + err.Error(), nil
		}
		return "", "", err
	}
	err = as.Applier.Wait(ctx, refs, labels, timeout, judgeTest(as.Applier.Health))
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

// deleteTests deletes earlier test objects and waits until they are gone.
func deleteTests(ctx context.Context, as *identity, refs []manifest.Ref, labels map[string]string, timeout time.Duration) error {
	if _, err := as.Applier.Delete(ctx, refs, labels); err != nil && !errors.Is(err, apply.ErrNotOwned) {
		return err
	}
	return as.Applier.Wait(ctx, refs, labels, timeout, func(_ manifest.Ref, obj *unstructured.Unstructured) health.Result {
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
