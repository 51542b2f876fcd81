package healthcheck

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/runtime/dynamicwatch"
)

// watch starts the watches the plan needs, expands Kustomizations and Applications from their
// caches, and records what the HealthCheck reads so that events reach it. It returns false while a
// source has not listed yet. The watches keep of each object only the fields the HealthCheck's
// checks read (see plan.needs).
func (r *Reconciler) watch(key string, p *plan, resolver *health.Resolver) (bool, error) {
	reads := health.NewEvaluator(r.Compiler, resolver).Reads
	// Add, not Set: until the sources are read, the watches of their objects must not stop.
	r.Watcher.AddNeeds(key, p.needs(reads)...)
	rd := ownerReader{watches: r.Watcher, owner: key}
	complete := true
	for _, src := range p.sources {
		ok, err := p.expand(rd, src)
		if err != nil {
			return false, err
		}
		complete = complete && ok
	}
	r.index.set(key, p.interests)
	if complete {
		r.Watcher.SetNeeds(key, p.needs(reads)...)
	} else {
		r.Watcher.AddNeeds(key, p.needs(reads)...)
	}
	if p.undiscovered || (p.hc.Spec.CommitStatus != nil && !p.commitStatusServed) {
		r.undiscovered.Store(key, struct{}{})
	} else {
		r.undiscovered.Delete(key)
	}
	return complete, nil
}

// unsynced names the scopes that have neither listed nor failed.
func (r *Reconciler) unsynced(key string, p *plan) []string {
	var out []string
	for s := range p.interests {
		if synced, err := r.Watcher.StateFor(key, s); !synced && err == nil {
			out = append(out, s.String())
		}
	}
	sort.Strings(out)
	return out
}

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
