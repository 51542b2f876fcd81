package manifestrelease

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/rollback-controller/internal/apply"
)

// applyRollback applies, at now, the snapshot a rollback goes back to, and deletes what only the
// version left behind had (s.Stale). A refusal by the API server is a finding; other errors are
// returned, and the rollback is resumed.
func (r *Reconciler) applyRollback(ctx context.Context, mr *rollbackv1.ManifestRelease, s step, now time.Time) (*rolled, error) {
	labels := ownerLabels(mr, false)
	if err := r.Applier.Apply(ctx, s.Objects, labels); err != nil {
		if refusedByServer(err) {
			return &rolled{Refused: err}, nil
		}
		return nil, err
	}
	if _, err := r.Applier.Delete(ctx, s.Stale, labels); err != nil {
		op := mr.Status.Operation
		return nil, fmt.Errorf("the rollback to %s: delete what only %s had: %w", describe(op.Version, op.Number), describe("the version left", op.From), err)
	}
	return &rolled{At: now}, nil
}

// awaitRollback looks once at the health of the rolled back version. Objects that do not become
// healthy do not stop the rollback: what it reports says so.
func (r *Reconciler) awaitRollback(ctx context.Context, o *observation, objs []*unstructured.Unstructured) error {
	rb := o.Found.Rolled
	done, bad, err := r.awaitHealth(ctx, o, objs, rb.At)
	if bad != nil {
		rb.HealthNote = "; but it is not healthy: " + bad.Error()
	}
	rb.Settled = done
	return err
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

// keptNumbers lists the snapshots of the history that still exist, for messages.
func (r *Reconciler) keptNumbers(ctx context.Context, mr *rollbackv1.ManifestRelease) string {
	var kept []string
	for _, n := range knownNumbers(mr.Status) {
		if _, err := r.Snapshots.Head(ctx, mr.Namespace, mr.Name, n); err == nil {
			kept = append(kept, strconv.FormatInt(n, 10))
		}
	}
	if len(kept) == 0 {
		return "none"
	}
	return strings.Join(kept, ", ")
}
