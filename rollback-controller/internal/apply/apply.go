package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/runtime/reconcile"
)

// Mapper maps kinds to resources and can forget what it learnt, after CRDs change.
type Mapper interface {
	meta.RESTMapper
	Reset()
}

// Applier applies, waits for and deletes objects of one owner.
type Applier struct {
	Dynamic      dynamic.Interface
	Mapper       Mapper
	FieldManager string
	// Health judges one object.
	Health func(*unstructured.Unstructured) health.Result
	// Parallel is how many objects of one rank are applied at once: 8 when zero.
	Parallel int
	// Poll is the time between two reads while waiting: 500ms when zero.
	Poll time.Duration
}

// Error is a failure of one object.
type Error struct {
	Object manifest.Ref
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Object, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Apply server-side applies objs (in pkg/manifest order), each with labels added, and returns
// once every one is written. The first error stops it.
func (a *Applier) Apply(ctx context.Context, objs []*unstructured.Unstructured, labels map[string]string) error {
	first, rest := manifest.Stages(objs)
	if err := a.applyRanks(ctx, first, labels); err != nil {
		return err
	}
	if err := a.waitEstablished(ctx, first); err != nil {
		return err
	}
	return a.applyRanks(ctx, rest, labels)
}

func (a *Applier) applyRanks(ctx context.Context, objs []*unstructured.Unstructured, labels map[string]string) error {
	for start := 0; start < len(objs); {
		end := start + 1
		for end < len(objs) && manifest.SameRank(manifest.RefOf(objs[start]), manifest.RefOf(objs[end])) {
			end++
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(a.parallel())
		for _, obj := range objs[start:end] {
			g.Go(func() error { return a.applyOne(gctx, obj, labels) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
		start = end
	}
	return nil
}

func (a *Applier) parallel() int {
	if a.Parallel > 0 {
		return a.Parallel
	}
	return 8
}

func (a *Applier) applyOne(ctx context.Context, obj *unstructured.Unstructured, labels map[string]string) error {
	ref := manifest.RefOf(obj)
	obj = obj.DeepCopy()
	merged := obj.GetLabels()
	if merged == nil {
		merged = map[string]string{}
	}
	for k, v := range labels {
		merged[k] = v
	}
	obj.SetLabels(merged)
	ri, err := a.resource(ref)
	if err != nil {
		return &Error{Object: ref, Err: err}
	}
	if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: a.FieldManager, Force: true}); err != nil {
		return &Error{Object: ref, Err: err}
	}
	return nil
}

// resource returns the client of ref's resource; an unknown kind resets the mapper once, since a
// CRD may have been established since it last looked.
func (a *Applier) resource(ref manifest.Ref) (dynamic.ResourceInterface, error) {
	mapping, err := a.Mapper.RESTMapping(ref.GroupKind(), ref.Version)
	if meta.IsNoMatchError(err) {
		a.Mapper.Reset()
		mapping, err = a.Mapper.RESTMapping(ref.GroupKind(), ref.Version)
	}
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.Dynamic.Resource(mapping.Resource).Namespace(ref.Namespace), nil
	}
	return a.Dynamic.Resource(mapping.Resource), nil
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// waitEstablished waits until every CRD among objs is Established, then resets the mapper.
func (a *Applier) waitEstablished(ctx context.Context, objs []*unstructured.Unstructured) error {
	var crds []string
	for _, obj := range objs {
		if manifest.RefOf(obj).IsCRD() {
			crds = append(crds, obj.GetName())
		}
	}
	if len(crds) == 0 {
		return nil
	}
	for _, name := range crds {
		err := a.poll(ctx, func() (bool, error) {
			crd, err := a.Dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return conditionTrue(crd, "Established"), nil
		})
		if err != nil {
			return &Error{Object: manifest.Ref{Group: crdResource.Group, Version: "v1", Kind: "CustomResourceDefinition", Name: name},
				Err: fmt.Errorf("not established: %w", err)}
		}
	}
	a.Mapper.Reset()
	return nil
}

func (a *Applier) poll(ctx context.Context, done func() (bool, error)) error {
	interval := a.Poll
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

func conditionTrue(obj *unstructured.Unstructured, condition string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == condition && m["status"] == "True" {
			return true
		}
	}
	return false
}

// ErrNotOwned is a delete refused because the live object does not carry the owner's labels.
var ErrNotOwned = errors.New("the object is not labelled as ours")

// Delete deletes refs in the order given, skipping those already gone and refusing (without
// stopping) those that do not carry labels. An object taken over from someone else (it carries
// PreviousAnnotation) is given back, with its content from before, instead. It returns what it deleted and every failure.
func (a *Applier) Delete(ctx context.Context, refs []manifest.Ref, labels map[string]string) ([]manifest.Ref, error) {
	var deleted []manifest.Ref
	var errs []error
	background := metav1.DeletePropagationBackground
	for _, ref := range refs {
		ri, err := a.resource(ref)
		if meta.IsNoMatchError(err) {
			continue // its kind is gone, and it with it
		}
		if err != nil {
			errs = append(errs, &Error{Object: ref, Err: err})
			continue
		}
		live, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
		if isNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, &Error{Object: ref, Err: err})
			continue
		}
		if !reconcile.HasLabels(live.GetLabels(), labels) {
			errs = append(errs, &Error{Object: ref, Err: ErrNotOwned})
			continue
		}
		if _, adopted := live.GetAnnotations()[PreviousAnnotation]; adopted {
			if err := a.restore(ctx, ri, live); err != nil {
				errs = append(errs, &Error{Object: ref, Err: err})
				continue
			}
			deleted = append(deleted, ref)
			continue
		}
		uid := live.GetUID()
		err = ri.Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !isNotFound(err) {
			errs = append(errs, &Error{Object: ref, Err: err})
			continue
		}
		deleted = append(deleted, ref)
	}
	return deleted, errors.Join(errs...)
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
