package healthcheck

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/health-controller/internal/sources"
	"github.com/sluicehq/sluice/pkg/health"
)

// evaluation computes the health of the targets, and reads the revision they run and the
// CommitStatus the verdict goes to.
func (r *Reconciler) evaluation(p *plan, resolver *health.Resolver) *evaluation {
	start := time.Now()
	e := &evaluation{}
	e.Resources, e.Errors = r.evaluate(p, resolver)
	e.Took = time.Since(start)
	e.Now = r.Clock.Now()
	e.Revision, e.Commit, e.Unsettled, e.RevisionErr = r.revision(p.hc, p)
	e.CommitStatus = r.readCommitStatus(p)
	return e
}

// checkSource says where the check that failed to evaluate is kept, which is where to fix it.
func (r *Reconciler) checkSource(s health.Source) string {
	switch s {
	case health.SourceSpec:
		return "spec.healthCheckExprs"
	case health.SourceUser:
		return "user library ConfigMap " + r.Library.Ref()
	}
	return string(s)
}

// evaluate computes the health of every target object once, and counts the objects whose check
// failed to evaluate.
func (r *Reconciler) evaluate(p *plan, resolver *health.Resolver) (out []healthv1alpha1.ResourceHealth, errs int) {
	e := health.NewEvaluator(r.Compiler, resolver)
	rd := r.reads(p.hc)
	seen := map[string]bool{}
	add := func(rh healthv1alpha1.ResourceHealth) {
		group := rh.APIVersion
		if i := strings.LastIndex(group, "/"); i >= 0 {
			group = group[:i]
		} else {
			group = ""
		}
		id := group + "|" + rh.Kind + "|" + rh.Namespace + "|" + rh.Name
		if seen[id] {
			return
		}
		seen[id] = true
		out = append(out, rh)
	}
	evaluate := func(u *unstructured.Unstructured) {
		res := e.Evaluate(u)
		if res.Status == health.Unknown {
			if m, ok := resolver.Match(u.GroupVersionKind()); ok {
				errs++
				res.Message = r.checkSource(m.Source) + ": " + res.Message
			}
		}
		add(healthv1alpha1.ResourceHealth{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(),
			Status: healthv1alpha1.ResourceStatus(res.Status), Message: res.Message})
	}
	for _, rh := range p.results {
		add(rh)
	}
	for _, o := range p.objects {
		rh := healthv1alpha1.ResourceHealth{APIVersion: o.kind.gvk.GroupVersion().String(), Kind: o.kind.gvk.Kind, Namespace: o.namespace, Name: o.name}
		if synced, err := rd.State(o.kind.scope); !synced {
			rh.Status, rh.Message = healthv1alpha1.StatusUnknown, watchProblem(o.kind.scope, err)
			add(rh)
			continue
		}
		u, found, err := rd.Get(o.kind.scope, o.namespace, o.name)
		switch {
		case err != nil:
			rh.Status, rh.Message = healthv1alpha1.StatusUnknown, err.Error()
			add(rh)
		case !found:
			rh.Status, rh.Message = healthv1alpha1.StatusNotFound, "not found"
			add(rh)
		default:
			evaluate(u)
		}
	}
	for _, s := range p.selections {
		if synced, err := rd.State(s.kind.scope); !synced {
			add(healthv1alpha1.ResourceHealth{APIVersion: s.kind.gvk.GroupVersion().String(), Kind: s.kind.gvk.Kind, Namespace: s.kind.scope.Namespace,
				Status: healthv1alpha1.StatusUnknown, Message: watchProblem(s.kind.scope, err)})
			continue
		}
		objs, err := rd.List(s.kind.scope, s.selector)
		if err != nil {
			add(healthv1alpha1.ResourceHealth{APIVersion: s.kind.gvk.GroupVersion().String(), Kind: s.kind.gvk.Kind, Namespace: s.kind.scope.Namespace,
				Status: healthv1alpha1.StatusUnknown, Message: err.Error()})
			continue
		}
		for _, u := range objs {
			evaluate(u)
		}
	}
	return out, errs
}

// revision returns the revision the targets run, and its commit when spec.commitStatus needs
// one. Without spec.commitStatus the first Kustomization or Application target, if any, tells
// the revision, for status only. While the source has not finished applying, the revision is the
// one it is applying, and unsettled is the source as InProgress, saying so.
func (r *Reconciler) revision(hc *healthv1alpha1.HealthCheck, p *plan) (revision, commit string, unsettled *healthv1alpha1.ResourceHealth, err error) {
	if cs := hc.Spec.CommitStatus; cs != nil {
		if cs.Revision.Fixed != "" {
			return cs.Revision.Fixed, cs.Revision.Fixed, nil, nil
		}
		if p.revision == nil {
			return "", "", nil, errors.New("spec.commitStatus.revision names no source")
		}
		return readRevision(r.reads(hc), *p.revision)
	}
	for _, src := range p.sources {
		if rev, _, unsettled, _ := readRevision(r.reads(hc), src); rev != "" {
			return rev, "", unsettled, nil
		}
	}
	return "", "", nil, nil
}

func readRevision(rd Reader, src source) (revision, commit string, unsettled *healthv1alpha1.ResourceHealth, err error) {
	if !src.served {
		return "", "", nil, fmt.Errorf("the API server does not serve %s, so the revision of %s/%s cannot be read", describeKind(src.gk.WithVersion("")), src.namespace, src.name)
	}
	if synced, err := rd.State(src.kind.scope); !synced {
		return "", "", nil, errors.New(watchProblem(src.kind.scope, err))
	}
	obj, found, err := rd.Get(src.kind.scope, src.namespace, src.name)
	if err != nil {
		return "", "", nil, err
	}
	if !found {
		return "", "", nil, fmt.Errorf("%s %s/%s not found", src.gk.Kind, src.namespace, src.name)
	}
	var progress sources.Unsettled
	if src.gk == sources.Kustomization {
		revision, commit, err = sources.KustomizationRevision(obj)
		progress = sources.KustomizationUnsettled(obj)
	} else {
		revision, commit, err = sources.ApplicationRevision(obj)
		progress = sources.ApplicationUnsettled(obj)
	}
	if err != nil || progress.Settled() {
		return revision, commit, nil, err
	}
	if progress.Revision != revision {
		if commit, err = sources.ParseCommit(progress.Revision); err != nil {
			return progress.Revision, "", nil, fmt.Errorf("%s %s/%s: %w", src.gk.Kind, src.namespace, src.name, err)
		}
	}
	return progress.Revision, commit, &healthv1alpha1.ResourceHealth{APIVersion: src.kind.gvk.GroupVersion().String(), Kind: src.gk.Kind,
		Namespace: src.namespace, Name: src.name, Status: healthv1alpha1.StatusInProgress, Message: progress.Reason}, nil
}

// readCommitStatus reads the HealthCheck's CommitStatus from its watch, when spec.commitStatus
// asks for one.
func (r *Reconciler) readCommitStatus(p *plan) commitStatusRead {
	hc := p.hc
	if hc.Spec.CommitStatus == nil || !p.commitStatusServed {
		return commitStatusRead{}
	}
	cs := commitStatusRead{Served: true}
	rd := r.reads(hc)
	if synced, err := rd.State(*p.commitStatus); !synced {
		cs.Problem = watchProblem(*p.commitStatus, err)
		return cs
	}
	existing, found, err := rd.Get(*p.commitStatus, hc.Namespace, hc.Name)
	if found {
		cs.Existing = existing
	}
	cs.Err = err
	return cs
}
