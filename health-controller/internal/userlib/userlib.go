// Package userlib holds the user library: RFC-0009 health checks that a cluster administrator
// keeps in one ConfigMap. They override the built-in library and are overridden by a
// HealthCheck's own spec.healthCheckExprs.
package userlib

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluicehq/sluice/pkg/health"
	"github.com/sluicehq/sluice/pkg/health/cel"
	"github.com/sluicehq/sluice/pkg/health/library"
)

// Library is the current user library. It is safe for concurrent use.
type Library struct {
	compiler  *cel.Compiler
	namespace string
	name      string

	mu     sync.RWMutex
	layer  *health.Layer
	checks int
	err    error
}

// New returns an empty library that Update fills from the ConfigMap namespace/name.
func New(compiler *cel.Compiler, namespace, name string) *Library {
	return &Library{compiler: compiler, namespace: namespace, name: name}
}

// Ref is "namespace/name" of the ConfigMap.
func (l *Library) Ref() string { return l.namespace + "/" + l.name }

// Namespace and Name locate the library's ConfigMap.
func (l *Library) Namespace() string { return l.namespace }

// Name is the name of the library's ConfigMap.
func (l *Library) Name() string { return l.name }

// Update replaces the library with the content of cm; nil means the ConfigMap does not exist,
// which is an empty library. Every data key holds a YAML list of checks, in the format of the
// built-in library. The checks of all keys form one layer: two entries for the same kind, even
// in different keys, are an error, as is any expression that does not compile.
func (l *Library) Update(cm *corev1.ConfigMap) {
	layer, n, err := l.parse(cm)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.layer, l.checks, l.err = layer, n, err
}

// Layer returns the library, or the error that makes it unusable. Health is not computed with a
// broken library: falling back to the built-in checks could call healthy what the administrator
// meant to call failed.
func (l *Library) Layer() (*health.Layer, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.layer, l.err
}

// Size is the number of checks in the library.
func (l *Library) Size() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.checks
}

func (l *Library) parse(cm *corev1.ConfigMap) (*health.Layer, int, error) {
	if cm == nil {
		return nil, 0, nil
	}
	var all []health.Check
	var errs []error
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		checks, err := library.Parse([]byte(cm.Data[k]))
		if err != nil {
			errs = append(errs, fmt.Errorf("key %s: %w", k, err))
			continue
		}
		all = append(all, checks...)
	}
	if len(errs) == 0 {
		if err := health.CompileAll(l.compiler, all); err != nil {
			errs = append(errs, err)
		}
	}
	var layer *health.Layer
	if len(errs) == 0 {
		var err error
		if layer, err = health.NewLayer(health.SourceUser, all); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, 0, fmt.Errorf("user library ConfigMap %s: %w", l.Ref(), errors.Join(errs...))
	}
	return layer, len(all), nil
}
