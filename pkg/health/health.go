// Package health computes the health of Kubernetes objects, as RFC-0009
// defines it: CEL expressions for the kinds that have a check, kstatus for the
// others.
//
// A check comes from one of three sources, in this order of precedence: the
// HealthCheck's spec, the user library, the built-in library (see Resolver).
// Expressions are compiled once per distinct text by a shared cel.Compiler.
package health

import (
	"errors"
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Status is the health of one object.
type Status string

const (
	// Current means the object has reached its desired state.
	Current Status = "Current"
	// InProgress means the object is still converging.
	InProgress Status = "InProgress"
	// Failed means the object has failed to reach its desired state.
	Failed Status = "Failed"
	// Unknown means health could not be computed, for example because an
	// expression failed to evaluate.
	Unknown Status = "Unknown"
	// NotFound means the object does not exist.
	NotFound Status = "NotFound"
)

// Result is the health of one object with a message for people.
type Result struct {
	Status  Status
	Message string
}

// Check holds the CEL expressions for one kind, or for every kind of an API
// group when Kind is empty. Its fields are those of RFC-0009.
type Check struct {
	// APIVersion is group/version. A group-wide check (no Kind) applies to
	// every version of the group.
	APIVersion string `json:"apiVersion"`
	// Kind narrows the check to one kind of that exact apiVersion.
	Kind string `json:"kind,omitempty"`
	// Current is true once the object has reached its desired state.
	Current string `json:"current"`
	// InProgress is true while the object converges. Evaluated first.
	InProgress string `json:"inProgress,omitempty"`
	// Failed is true when the object has failed. Evaluated second.
	Failed string `json:"failed,omitempty"`
}

func (c Check) String() string {
	if c.Kind == "" {
		gv, err := schema.ParseGroupVersion(c.APIVersion)
		if err != nil || gv.Group == "" {
			return fmt.Sprintf("%s (all kinds)", c.APIVersion)
		}
		return fmt.Sprintf("%s (all kinds and versions)", gv.Group)
	}
	return c.APIVersion + " " + c.Kind
}

var versionPattern = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// Validate checks the fields that do not need compiling.
func (c Check) Validate() error {
	if c.APIVersion == "" {
		return errors.New("apiVersion is required")
	}
	gv, err := schema.ParseGroupVersion(c.APIVersion)
	if err != nil {
		return fmt.Errorf("apiVersion %q: %w", c.APIVersion, err)
	}
	if !versionPattern.MatchString(gv.Version) {
		return fmt.Errorf("apiVersion %q must be <group>/<version>, for example cert-manager.io/v1", c.APIVersion)
	}
	if c.Kind == "" && gv.Group == "" {
		return fmt.Errorf("apiVersion %q: a check without kind applies to a whole API group, and the core group is not allowed; set kind", c.APIVersion)
	}
	if c.Current == "" {
		return errors.New("the current expression is required")
	}
	return nil
}
