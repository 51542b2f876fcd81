package hold

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/pkg/gate"
	"github.com/sluicehq/sluice/pkg/text"
)

// RecordAnnotation carries the Record of a held target.
const RecordAnnotation = gate.HoldAnnotation

// ManualSyncsAnnotation marks a held Argo CD Application whose gates deny manual syncs, with the
// value Deny. The gate-controller chart's ValidatingAdmissionPolicy refuses an update that starts a
// sync operation on an Application that carries it; it is a plain annotation because admission
// policies cannot read the JSON record.
const ManualSyncsAnnotation = "gating.sluice.dev/manual-syncs"

// ManualSyncsDeny is ManualSyncsAnnotation's value.
const ManualSyncsDeny = "Deny"

// Bounds of a record, so that the record and the suspend annotation always fit beside a target's
// own annotations: the API server refuses an object whose annotations exceed 256 KiB, and a hold
// that cannot be written must never leave the target running.
const (
	// MaxReason bounds the reason, which is written twice: in the record and the annotation.
	MaxReason = gate.MaxReason
	// MaxGates bounds the gates a record names; a gate past it does not list the target as held.
	MaxGates = 64
)

// newRecord is the record of a hold by gates for reason, within the bounds.
func newRecord(gates []string, reason string) Record {
	r := Record{Gates: sortedCopy(gates), Reason: text.TruncateBytes(reason, MaxReason)}
	if len(r.Gates) > MaxGates {
		r.MoreGates = len(r.Gates) - MaxGates
		r.Gates = r.Gates[:MaxGates]
	}
	return r
}

// Change is a field the controller sets to hold a target.
type Change string

const (
	// ChangeAnnotation is the RFC-0006 annotation reconcile.fluxcd.io/suspended.
	ChangeAnnotation Change = "annotation"
	// ChangeSpec is the kind's spec field (SpecFieldOf): spec.suspend: true, or an Argo CD
	// Application's spec.syncPolicy.automated.enabled: false.
	ChangeSpec Change = "spec"
)

// Record is what the controller remembers on a held target.
type Record struct {
	// Gates are the gates that hold the target ("namespace/name"), sorted, at most MaxGates.
	Gates []string `json:"gates,omitempty"`
	// MoreGates counts the gates that hold the target beyond Gates.
	MoreGates int `json:"moreGates,omitempty"`
	// Reason says which gates hold the target and why, also when someone else's suspend
	// annotation is on the target instead of the controller's.
	Reason string `json:"reason"`
	// Set lists what the controller changed, and so what releasing undoes.
	Set []Change `json:"set,omitempty"`
	// DenyManualSyncs is true when a gate that holds the target denies manual syncs: the target
	// then carries ManualSyncsAnnotation, which the chart's admission policy reads.
	DenyManualSyncs bool `json:"denyManualSyncs,omitempty"`
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
	return slices.Equal(r.Gates, o.Gates) && r.MoreGates == o.MoreGates && r.Reason == o.Reason && slices.Equal(r.Set, o.Set) && r.Yielded == o.Yielded && r.DenyManualSyncs == o.DenyManualSyncs
}
