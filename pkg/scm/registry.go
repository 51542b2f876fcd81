package scm

import (
	"fmt"
	"sort"
	"sync"
)

// Factory builds a Provider from a Config.
type Factory func(Config) (Provider, error)

var (
	registryMu sync.RWMutex
	factories  = map[string]Factory{}
)

// Register makes a provider available under name. It fails on an empty name, a nil factory or a
// name registered twice.
func Register(name string, f Factory) error {
	if name == "" {
		return fmt.Errorf("scm: cannot register a provider without a name")
	}
	if f == nil {
		return fmt.Errorf("scm: provider %q registered without a factory", name)
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := factories[name]; dup {
		return fmt.Errorf("scm: provider %q is already registered", name)
	}
	factories[name] = f
	return nil
}

// MustRegister is Register for init functions of provider packages: a duplicate name is a
// programming error in the binary, found by its first test, so it panics.
func MustRegister(name string, f Factory) {
	if err := Register(name, f); err != nil {
		panic(err)
	}
}

// New builds the provider registered under name.
func New(name string, cfg Config) (Provider, error) {
	registryMu.RLock()
	f, ok := factories[name]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("scm: no provider named %q; known providers: %v (is its package imported?)", name, Registered())
	}
	return f(cfg)
}

// Registered lists the registered provider names, sorted.
func Registered() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(factories))
	for n := range factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
