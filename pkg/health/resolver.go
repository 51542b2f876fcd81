package health

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Source says where a check comes from.
type Source string

const (
	// SourceSpec is the HealthCheck's own healthCheckExprs.
	SourceSpec Source = "spec"
	// SourceUser is the cluster-wide user library.
	SourceUser Source = "user library"
	// SourceBuiltin is the library shipped with Sluice.
	SourceBuiltin Source = "built-in library"
)

// Layer is the checks of one source, indexed for lookup. Build the library
// layers once and reuse them across reconciles.
type Layer struct {
	source Source
	kinds  map[schema.GroupVersionKind]Check
	groups map[string]Check
}

// NewLayer validates and indexes checks. Two checks for the same kind, or two
// group-wide checks for the same group, are an error: which one applies
// would otherwise depend on list order.
func NewLayer(source Source, checks []Check) (*Layer, error) {
	l := &Layer{source: source, kinds: map[schema.GroupVersionKind]Check{}, groups: map[string]Check{}}
	var errs []error
	for i, c := range checks {
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s entry %d (%s): %w", source, i, c, err))
			continue
		}
		gv, _ := schema.ParseGroupVersion(c.APIVersion)
		if c.Kind == "" {
			if _, dup := l.groups[gv.Group]; dup {
				errs = append(errs, fmt.Errorf("%s entry %d: a second check for %s", source, i, c))
			}
			l.groups[gv.Group] = c
			continue
		}
		gvk := gv.WithKind(c.Kind)
		if _, dup := l.kinds[gvk]; dup {
			errs = append(errs, fmt.Errorf("%s entry %d: a second check for %s", source, i, c))
		}
		l.kinds[gvk] = c
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// Match is the check that applies to an object, and where it comes from.
type Match struct {
	Check  Check
	Source Source
}

// Resolver finds the check for a kind across layers.
//
// Sources come first: a HealthCheck's spec beats the user library, which
// beats the built-in library, even when the higher source has only a
// group-wide entry. Whoever wrote the higher source chose to cover the group.
// Within one source, a kind entry beats the group-wide entry of its group.
type Resolver struct {
	layers []*Layer
}

// NewResolver searches layers in the given order. Nil layers are skipped.
func NewResolver(layers ...*Layer) *Resolver {
	r := &Resolver{}
	for _, l := range layers {
		if l != nil {
			r.layers = append(r.layers, l)
		}
	}
	return r
}

// Resolve merges the three sources in their order of precedence.
func Resolve(spec, user, builtin []Check) (*Resolver, error) {
	var layers []*Layer
	var errs []error
	for _, src := range []struct {
		source Source
		checks []Check
	}{{SourceSpec, spec}, {SourceUser, user}, {SourceBuiltin, builtin}} {
		l, err := NewLayer(src.source, src.checks)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		layers = append(layers, l)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return NewResolver(layers...), nil
}

// Match returns the check for gvk; false means kstatus applies.
func (r *Resolver) Match(gvk schema.GroupVersionKind) (Match, bool) {
	for _, l := range r.layers {
		if c, ok := l.kinds[gvk]; ok {
			return Match{Check: c, Source: l.source}, true
		}
		if c, ok := l.groups[gvk.Group]; ok {
			return Match{Check: c, Source: l.source}, true
		}
	}
	return Match{}, false
}
