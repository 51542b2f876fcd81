package hold

import (
	"encoding/json"
	"fmt"
	"slices"
)

// RecordAnnotation carries the Record of a held target.
const RecordAnnotation = "gating.sluice.dev/hold"

// Change is a field the controller sets to hold a target.
type Change string

const (
	// ChangeAnnotation is the RFC-0006 annotation reconcile.fluxcd.io/suspended.
	ChangeAnnotation Change = "annotation"
	// ChangeSpec is spec.suspend: true.
	ChangeSpec Change = "spec"
)

// Record is what the controller remembers on a held target.
type Record struct {
	// Gates are the gates that hold the target ("namespace/name"), sorted.
	Gates []string `json:"gates,omitempty"`
	// Reason says which gates hold the target and why, also when someone else's suspend
	// annotation is on the target instead of the controller's.
	Reason string `json:"reason"`
	// Set lists what the controller changed, and so what releasing undoes.
	Set []Change `json:"set,omitempty"`
	// Yielded is true when someone resumed the target while its gates were closed. The
	// controller respects that and does not hold the target again until its gates allow.
	Yielded bool `json:"yielded,omitempty"`
}

func (r Record) has(c Change) bool { return slices.Contains(r.Set, c) }

// ParseRecord reads the value of RecordAnnotation.
func ParseRecord(value string) (Record, error) {
	var r Record
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return Record{}, fmt.Errorf("%s is not a gate-controller record: %w", RecordAnnotation, err)
	}
	return r, nil
}

// String is the annotation value.
func (r Record) String() string {
	b, err := json.Marshal(r)
	if err != nil {
		// A struct of strings and bools always marshals.
		return "{}"
	}
	return string(b)
}

func (r Record) equal(o Record) bool {
	return slices.Equal(r.Gates, o.Gates) && r.Reason == o.Reason && slices.Equal(r.Set, o.Set) && r.Yielded == o.Yielded
}
