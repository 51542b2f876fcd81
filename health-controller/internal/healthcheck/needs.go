package healthcheck

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
)

// needs returns the fields the HealthCheck reads in each watch of the plan: the whole of its
// Kustomizations, Applications and CommitStatus, and of its targets what reads lists for their
// kind (health.Evaluator.Reads: the fields its CEL check reads, or kstatus's). A watch of 10,000
// Deployments then drops their pod templates, most of their bytes.
func (p *plan) needs(reads func(schema.GroupVersionKind) [][]string) []dynamicwatch.Need {
	fields := make(map[dynamicwatch.Scope]dynamicwatch.Fields, len(p.interests))
	add := func(s dynamicwatch.Scope, f dynamicwatch.Fields) {
		if prev, ok := fields[s]; ok {
			f = dynamicwatch.Union(prev, f)
		}
		fields[s] = f
	}
	for _, src := range p.sources {
		if src.served {
			add(src.kind.scope, dynamicwatch.All)
		}
	}
	if p.revision != nil && p.revision.served {
		add(p.revision.kind.scope, dynamicwatch.All)
	}
	if p.commitStatus != nil {
		add(*p.commitStatus, dynamicwatch.All)
	}
	byKind := map[schema.GroupVersionKind]dynamicwatch.Fields{}
	target := func(k kind) {
		f, ok := byKind[k.gvk]
		if !ok {
			f = dynamicwatch.FieldsOf(reads(k.gvk)...)
			byKind[k.gvk] = f
		}
		add(k.scope, f)
	}
	for _, o := range p.objects {
		target(o.kind)
	}
	for _, s := range p.selections {
		target(s.kind)
	}
	out := make([]dynamicwatch.Need, 0, len(p.interests))
	for s := range p.interests {
		f, ok := fields[s]
		if !ok {
			// Read by no role above: keep everything rather than guess.
			f = dynamicwatch.All
		}
		out = append(out, dynamicwatch.Need{Scope: s, Fields: f})
	}
	return out
}

// ownerReader reads the watches for one HealthCheck: a scope is synced for it once its cache
// keeps the fields the HealthCheck reads, while the watch may still serve other HealthChecks
// that read less.
type ownerReader struct {
	watches Watches
	owner   string
}

func (o ownerReader) State(s dynamicwatch.Scope) (bool, error) { return o.watches.StateFor(o.owner, s) }

func (o ownerReader) Get(s dynamicwatch.Scope, namespace, name string) (*unstructured.Unstructured, bool, error) {
	return o.watches.Get(s, namespace, name)
}

func (o ownerReader) List(s dynamicwatch.Scope, selector labels.Selector) ([]*unstructured.Unstructured, error) {
	return o.watches.List(s, selector)
}

// reads returns the reader of hc's watches.
func (r *Reconciler) reads(hc *healthv1alpha1.HealthCheck) Reader {
	return ownerReader{watches: r.Watcher, owner: hc.Namespace + "/" + hc.Name}
}
