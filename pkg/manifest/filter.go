package manifest

import (
	"fmt"
	"path"
)

// Filter selects test objects by name, as in RFC-0002's spec.test.filters. Name is a glob
// (path.Match) compared with the test object's name and with the name of the ConfigMap that
// defines it.
type Filter struct {
	Name    string
	Exclude bool
}

// ValidateFilters returns an error naming the first filter whose pattern is malformed.
func ValidateFilters(filters []Filter) error {
	for i, f := range filters {
		if f.Name == "" {
			return fmt.Errorf("filters[%d].name is empty", i)
		}
		if _, err := path.Match(f.Name, ""); err != nil {
			return fmt.Errorf("filters[%d].name %q is not a valid glob: %w", i, f.Name, err)
		}
	}
	return nil
}

// Selects reports whether a test runs: when there are filters that include, it must match one of
// them; and it must match no filter that excludes. Exclusion wins. Filters must be valid.
func Selects(filters []Filter, names ...string) bool {
	included, haveIncludes := false, false
	for _, f := range filters {
		matched := matchesAny(f.Name, names)
		if f.Exclude && matched {
			return false
		}
		if !f.Exclude {
			haveIncludes = true
			included = included || matched
		}
	}
	return included || !haveIncludes
}

func matchesAny(pattern string, names []string) bool {
	for _, n := range names {
		if ok, _ := path.Match(pattern, n); ok {
			return true
		}
	}
	return false
}
