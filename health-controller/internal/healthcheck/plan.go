package healthcheck

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/health-controller/internal/sources"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
)

// Mapper finds the resource of a kind, from discovery.
type Mapper interface {
	RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error)
}

// Reader reads watched objects.
type Reader interface {
	State(s dynamicwatch.Scope) (synced bool, err error)
	Get(s dynamicwatch.Scope, namespace, name string) (*unstructured.Unstructured, bool, error)
	List(s dynamicwatch.Scope, selector labels.Selector) ([]*unstructured.Unstructured, error)
}

// secretKind is never read: Secrets are only ever read through explicit references. kstatus
// calls every existing Secret Current, so a Secret in an inventory is counted Current unread.
var secretKind = schema.GroupKind{Kind: "Secret"}

var commitStatusKind = commitstatusv1alpha1.SchemeGroupVersion.WithKind("CommitStatus")

// kind is a target kind as the API server serves it, and the watch that reads it.
type kind struct {
	gvk   schema.GroupVersionKind
	scope dynamicwatch.Scope
}

type namedObject struct {
	kind            kind
	namespace, name string
}

type selection struct {
	kind     kind
	selector labels.Selector
}

type source struct {
	gk              schema.GroupKind
	namespace, name string
	kind            kind
	served          bool
}

// plan is what one HealthCheck reads: the watches it needs, the objects it evaluates, and what it
// could not resolve.
type plan struct {
	hc        *healthv1alpha1.HealthCheck
	mapper    Mapper
	crossNS   bool
	interests map[dynamicwatch.Scope]*interest

	objects    []namedObject
	selections []selection
	sources    []source
	revision   *source
	// results are decided without reading: kinds that are not served, unread Secrets, sources
	// that cannot be expanded.
	results []healthv1alpha1.ResourceHealth
	// invalid holds targets that cannot be used as written; the HealthCheck is Stalled.
	invalid []string
	// undiscovered is true when a kind was not served; a new CRD may change that.
	undiscovered bool
	// commitStatus is the watch of the HealthCheck's CommitStatus; nil when not needed or when the
	// CRD is not served (commitStatusServed says which).
	commitStatus       *dynamicwatch.Scope
	commitStatusServed bool
}

func newPlan(hc *healthv1alpha1.HealthCheck, mapper Mapper, allowCrossNamespace bool) *plan {
	return &plan{hc: hc, mapper: mapper, crossNS: allowCrossNamespace, interests: map[dynamicwatch.Scope]*interest{}}
}

func (p *plan) interest(s dynamicwatch.Scope) *interest {
	in, ok := p.interests[s]
	if !ok {
		in = &interest{}
		p.interests[s] = in
	}
	return in
}

// resolve maps a kind to its watch in namespace. A version the server no longer serves falls back
// to the preferred one: inventories keep the version they were applied with. ok is false when the
// kind is not served at all.
func (p *plan) resolve(gvk schema.GroupVersionKind, namespace string) (kind, bool, error) {
	var versions []string
	if gvk.Version != "" {
		versions = []string{gvk.Version}
	}
	m, err := p.mapper.RESTMapping(gvk.GroupKind(), versions...)
	if meta.IsNoMatchError(err) && len(versions) > 0 {
		m, err = p.mapper.RESTMapping(gvk.GroupKind())
	}
	if meta.IsNoMatchError(err) {
		p.undiscovered = true
		return kind{}, false, nil
	}
	if err != nil {
		return kind{}, false, fmt.Errorf("discovering %s: %w", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		namespace = ""
	}
	return kind{gvk: m.GroupVersionKind, scope: dynamicwatch.Scope{Resource: m.Resource, Namespace: namespace}}, true, nil
}

func (p *plan) namespaceOf(ns string) string {
	if ns == "" {
		return p.hc.Namespace
	}
	return ns
}

func (p *plan) checkNamespace(what, ns string) bool {
	if p.crossNS || ns == p.hc.Namespace {
		return true
	}
	p.invalid = append(p.invalid, fmt.Sprintf("%s is in namespace %s: this controller runs with --no-cross-namespace-refs, so targets must be in the HealthCheck's namespace %s",
		what, ns, p.hc.Namespace))
	return false
}

func notServed(gvk schema.GroupVersionKind, namespace, name string) healthv1alpha1.ResourceHealth {
	apiVersion := gvk.GroupVersion().String()
	if gvk.Version == "" {
		apiVersion = gvk.Group
	}
	return healthv1alpha1.ResourceHealth{APIVersion: apiVersion, Kind: gvk.Kind, Namespace: namespace, Name: name,
		Status: healthv1alpha1.StatusNotFound, Message: fmt.Sprintf("the API server does not serve %s (is its CRD installed?)", describeKind(gvk))}
}

func describeKind(gvk schema.GroupVersionKind) string {
	if gvk.Version == "" {
		return gvk.Kind + " in group " + gvk.Group
	}
	return gvk.Kind + " " + gvk.GroupVersion().String()
}

// addTargets resolves the spec: direct targets, the sources to expand, the revision source and
// the CommitStatus watch.
func (p *plan) addTargets() error {
	for i, t := range p.hc.Spec.Targets {
		var err error
		switch {
		case t.Object != nil:
			err = p.addObject(i, *t.Object)
		case t.Selector != nil:
			err = p.addSelector(i, *t.Selector)
		case t.Kustomization != nil:
			err = p.addSource(&p.sources, sources.Kustomization, *t.Kustomization)
		case t.Application != nil:
			err = p.addSource(&p.sources, sources.Application, *t.Application)
		default:
			p.invalid = append(p.invalid, fmt.Sprintf("spec.targets[%d] sets none of object, selector, kustomization or application", i))
		}
		if err != nil {
			return err
		}
	}
	if cs := p.hc.Spec.CommitStatus; cs != nil {
		var revs []source
		var err error
		switch {
		case cs.Revision.Kustomization != nil:
			err = p.addSource(&revs, sources.Kustomization, *cs.Revision.Kustomization)
		case cs.Revision.Application != nil:
			err = p.addSource(&revs, sources.Application, *cs.Revision.Application)
		}
		if err != nil {
			return err
		}
		if len(revs) == 1 {
			p.revision = &revs[0]
		}
		k, served, err := p.resolve(commitStatusKind, p.hc.Namespace)
		if err != nil {
			return err
		}
		p.commitStatusServed = served
		if served {
			p.commitStatus = &k.scope
			p.interest(k.scope).addName(p.hc.Namespace, p.hc.Name)
		}
	}
	return nil
}

func (p *plan) parseGVK(i int, field, apiVersion, kindName string) (schema.GroupVersionKind, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Version == "" {
		p.invalid = append(p.invalid, fmt.Sprintf("spec.targets[%d].%s.apiVersion %q must be <group>/<version> or <version>, for example apps/v1 or v1", i, field, apiVersion))
		return schema.GroupVersionKind{}, false
	}
	gvk := gv.WithKind(kindName)
	if gvk.GroupKind() == secretKind {
		p.invalid = append(p.invalid, fmt.Sprintf("spec.targets[%d].%s: Secrets are never read by the health-controller; kstatus calls every existing Secret Current", i, field))
		return schema.GroupVersionKind{}, false
	}
	return gvk, true
}

func (p *plan) addObject(i int, o healthv1alpha1.ObjectReference) error {
	gvk, ok := p.parseGVK(i, "object", o.APIVersion, o.Kind)
	if !ok {
		return nil
	}
	ns := p.namespaceOf(o.Namespace)
	k, served, err := p.resolve(gvk, ns)
	if err != nil || !served {
		if !served && err == nil {
			p.results = append(p.results, notServed(gvk, ns, o.Name))
		}
		return err
	}
	if k.scope.Namespace != "" && !p.checkNamespace(fmt.Sprintf("spec.targets[%d] %s %s", i, o.Kind, o.Name), ns) {
		return nil
	}
	p.objects = append(p.objects, namedObject{kind: k, namespace: k.scope.Namespace, name: o.Name})
	p.interest(k.scope).addName(k.scope.Namespace, o.Name)
	return nil
}

func (p *plan) addSelector(i int, s healthv1alpha1.KindSelector) error {
	gvk, ok := p.parseGVK(i, "selector", s.APIVersion, s.Kind)
	if !ok {
		return nil
	}
	selector := labels.Everything()
	if s.LabelSelector != nil {
		var err error
		if selector, err = metav1.LabelSelectorAsSelector(s.LabelSelector); err != nil {
			p.invalid = append(p.invalid, fmt.Sprintf("spec.targets[%d].selector.labelSelector: %v", i, err))
			return nil
		}
	}
	ns := p.namespaceOf(s.Namespace)
	k, served, err := p.resolve(gvk, ns)
	if err != nil || !served {
		if !served && err == nil {
			p.results = append(p.results, notServed(gvk, ns, ""))
		}
		return err
	}
	if k.scope.Namespace != "" && !p.checkNamespace(fmt.Sprintf("spec.targets[%d] %s selector", i, s.Kind), ns) {
		return nil
	}
	p.selections = append(p.selections, selection{kind: k, selector: selector})
	in := p.interest(k.scope)
	in.selectors = append(in.selectors, selector)
	return nil
}

func (p *plan) addSource(into *[]source, gk schema.GroupKind, ref healthv1alpha1.SourceReference) error {
	ns := p.namespaceOf(ref.Namespace)
	if !p.checkNamespace(fmt.Sprintf("%s %s", gk.Kind, ref.Name), ns) {
		return nil
	}
	k, served, err := p.resolve(gk.WithVersion(""), ns)
	if err != nil {
		return err
	}
	src := source{gk: gk, namespace: ns, name: ref.Name, kind: k, served: served}
	if served {
		p.interest(k.scope).addName(ns, ref.Name)
	}
	*into = append(*into, src)
	return nil
}

func watchProblem(s dynamicwatch.Scope, err error) string {
	if apierrors.IsForbidden(err) {
		return fmt.Sprintf("forbidden to watch %s: give the controller read access, with the chart's watch.extraRules", s)
	}
	return fmt.Sprintf("cannot watch %s: %v", s, err)
}
