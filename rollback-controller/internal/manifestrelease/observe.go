package manifestrelease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// observe returns the observation the next step is decided from: mr as it is now, and the
// progress of its operation kept from the steps before, with what the next decision needs and
// was not read yet, by where the release stands. A release at rest is read once per operation:
// its spec, a rollback asked for, or else its source and what an upgrade to it would do.
func (r *Reconciler) observe(ctx context.Context, as *identity, mr *rollbackv1.ManifestRelease, suspended suspend.State, kept progress) (*observation, error) {
	o := &observation{Release: mr, Suspend: suspended, Now: r.Clock.Now(), Actor: as.Reviewer.User, progress: kept}
	var err error
	switch {
	case mr.DeletionTimestamp != nil:
		err = r.observeDeletion(ctx, as, o)
	case !holdsFinalizer(mr) || suspended.Suspended:
	case mr.Status.Operation != nil:
		err = r.observeOperation(ctx, as, o)
	case o.SpecErr == nil && o.Ask == nil && o.Source == nil:
		if err = r.observeRest(ctx, as, o); err == nil && o.Source != nil && wantsUpgrade(o) {
			o.Upgrade, err = r.observeUpgrade(ctx, as, mr, o.Source)
		}
	}
	return o, err
}

// observeRest reads what comes first for a release at rest: its spec, then a rollback asked for,
// or else its source.
func (r *Reconciler) observeRest(ctx context.Context, as *identity, o *observation) error {
	mr := o.Release
	if o.SpecErr = validateSpec(mr); o.SpecErr != nil {
		return nil
	}
	var err error
	if value, ok := rollbackRequest(mr); ok {
		o.Ask, err = r.observeAsk(ctx, as, mr, value)
		return err
	}
	o.Source, err = r.observeSource(ctx, as, mr)
	return err
}

// observeSource reads the source, measures it and prepares its objects.
func (r *Reconciler) observeSource(ctx context.Context, as *identity, mr *rollbackv1.ManifestRelease) (*sourceRead, error) {
	fetched, err := as.Sources.Fetch(ctx, mr)
	src := &sourceRead{}
	if errors.As(err, &src.Err) {
		return src, nil
	}
	if err != nil {
		return nil, err
	}
	if src.Digest, src.DigestErr = snapshot.Digest(fetched.Files, as.Snapshots.Options); src.DigestErr != nil {
		return src, nil
	}
	if fetched.Version == "" {
		fetched.Version = shortDigest(src.Digest)
	}
	src.Fetched = fetched
	src.Objects, src.PrepareErr = r.prepare(mr, fetched.Files)
	return src, nil
}

// observeUpgrade checks an upgrade to src before anything is written: the rights it needs, the
// objects it would take over, and the CRDs it would change.
func (r *Reconciler) observeUpgrade(ctx context.Context, as *identity, mr *rollbackv1.ManifestRelease, src *sourceRead) (*upgradePlan, error) {
	p := &upgradePlan{Number: nextNumber(mr.Status), Objects: src.Objects, Refs: manifest.Inventory(src.Objects),
		Previous: fromInventory(mr.Status.Inventory)}
	if src.PrepareErr != nil {
		return p, nil
	}
	if pruneEnabled(mr) {
		p.Stale = manifest.Stale(p.Previous, p.Refs)
	}
	action, tests := "the upgrade to "+src.Fetched.Version, r.plannedTests(ctx, as, mr)
	var err error
	p.Problem, err = r.checkAccess(ctx, as, mr, action, plan{apply: src.Objects, stale: p.Stale, tests: tests, snapshot: p.Number})
	if p.Problem != nil || err != nil {
		return p, err
	}
	if p.Adopt, p.Problem, err = r.checkOwnership(ctx, as, mr, action, src.Objects, tests); p.Problem != nil || err != nil {
		return p, err
	}
	p.Problem, err = r.checkCRDs(ctx, as, action, src.Objects, p.Stale)
	return p, err
}

// observeAsk reads the snapshot a rollback-to annotation asks for.
func (r *Reconciler) observeAsk(ctx context.Context, as *identity, mr *rollbackv1.ManifestRelease, value string) (*rollbackAsk, error) {
	ask := &rollbackAsk{Value: value}
	number, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	switch {
	case err != nil || number < 1:
		ask.Refused = fmt.Sprintf("%s=%q is not a snapshot number", rollbackv1.RollbackToAnnotation, value)
		return ask, nil
	case number == mr.Status.UpgradeNumber:
		ask.Refused = fmt.Sprintf("snapshot %d is already deployed", number)
		return ask, nil
	}
	ask.Number = number
	ask.Files, ask.Info, err = as.Snapshots.Load(ctx, mr.Namespace, mr.Name, number)
	if !unusableSnapshot(err) {
		return ask, err
	}
	ask.LoadErr, ask.Kept = err, r.keptNumbers(ctx, as, mr)
	return ask, nil
}

// observeOperation loads the snapshot the recorded operation applies, unless this reconcile has
// it already, and checks a rollback to it.
func (r *Reconciler) observeOperation(ctx context.Context, as *identity, o *observation) error {
	mr, op := o.Release, o.Release.Status.Operation
	if o.Op != nil && o.Op.Number == op.Number {
		return nil
	}
	t := &opTarget{Number: op.Number}
	o.Op = t
	var files []snapshot.File
	var err error
	switch {
	case o.Upgrade != nil && o.Upgrade.Number == op.Number:
		// Saved by this reconcile, from the source it read: the objects are at hand.
		t.Objects = o.Upgrade.Objects
	case o.Ask != nil && o.Ask.Number == op.Number:
		files = o.Ask.Files
	default:
		files, _, err = as.Snapshots.Load(ctx, mr.Namespace, mr.Name, op.Number)
	}
	resumable := errors.Is(err, snapshot.ErrNotFound) || errors.Is(err, snapshot.ErrIncomplete) || errors.Is(err, snapshot.ErrNotOwned)
	if isRollback := op.Action != rollbackv1.ActionUpgrade; resumable || (isRollback && unusableSnapshot(err)) {
		t.LoadErr = err
		return nil
	}
	if err != nil {
		return err
	}
	if t.Objects == nil {
		if t.Objects, t.PrepareErr = r.prepare(mr, files); t.PrepareErr != nil {
			return nil
		}
	}
	if op.Action == rollbackv1.ActionUpgrade {
		return nil
	}
	t.Target = manifest.Inventory(t.Objects)
	current := fromInventory(mr.Status.Inventory)
	t.Stale, t.Missing = manifest.Stale(current, t.Target), len(manifest.Stale(t.Target, current)) > 0
	action := "the rollback to " + describe(op.Version, op.Number)
	if t.Problem, err = r.checkAccess(ctx, as, mr, action, plan{apply: t.Objects, stale: t.Stale}); t.Problem != nil || err != nil {
		return err
	}
	t.Problem, err = r.checkCRDs(ctx, as, action, t.Objects, t.Stale)
	return err
}

// observeDeletion checks, once, that the identity may delete the objects of a deleted release.
func (r *Reconciler) observeDeletion(ctx context.Context, as *identity, o *observation) error {
	mr := o.Release
	if o.deletionChecked || !holdsFinalizer(mr) || o.Suspend.Suspended || !pruneEnabled(mr) || len(mr.Status.Inventory) == 0 {
		return nil
	}
	o.deletionChecked = true
	var err error
	o.DeletionProblem, err = r.checkDeletion(ctx, as, mr)
	return err
}

func validateSpec(mr *rollbackv1.ManifestRelease) error {
	if t := mr.Spec.Test; t != nil {
		if err := manifest.ValidateFilters(filters(t)); err != nil {
			return fmt.Errorf("spec.test.%v", err)
		}
	}
	return snapshot.ValidateMeta(snapshot.Meta{Release: mr.Name, Number: 1})
}

// prepare parses files into objects in apply order, namespaced into the target namespace.
func (r *Reconciler) prepare(mr *rollbackv1.ManifestRelease, files []snapshot.File) ([]*unstructured.Unstructured, error) {
	raw := make(map[string][]byte, len(files))
	var all []*unstructured.Unstructured
	for _, f := range files {
		raw[f.Name] = f.Data
		objs, err := manifest.ParseFile(f.Name, f.Data)
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	return manifest.Prepare(raw, manifest.ScopeFrom(r.Applier.Mapper, all), targetNamespace(mr))
}

// rollbackRequest returns a rollback-to annotation value not yet acted on.
func rollbackRequest(mr *rollbackv1.ManifestRelease) (string, bool) {
	value, ok := mr.Annotations[rollbackv1.RollbackToAnnotation]
	return value, ok && value != mr.Status.LastHandledRollback
}

// nextNumber is one more than any number the release used. A number a crash kept out of the
// status may be used again: writeSnapshot replaces what it holds.
func nextNumber(st rollbackv1.ManifestReleaseStatus) int64 {
	known := knownNumbers(st)
	if len(known) == 0 {
		return 1
	}
	return known[len(known)-1] + 1
}

// unusableSnapshot reports a snapshot that cannot be rolled back to, for a reason that does not
// pass.
func unusableSnapshot(err error) bool {
	return errors.Is(err, snapshot.ErrNotFound) || errors.Is(err, snapshot.ErrIncomplete) ||
		errors.Is(err, snapshot.ErrInvalidArchive) || errors.Is(err, snapshot.ErrNotOwned)
}
