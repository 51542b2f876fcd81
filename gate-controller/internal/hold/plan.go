package hold

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluicehq/sluice/pkg/suspend"
)

// Mode says how a kind is held.
type Mode string

const (
	// ModeAnnotation sets only reconcile.fluxcd.io/suspended, for kinds that honour RFC-0006,
	// such as every Sluice kind.
	ModeAnnotation Mode = "annotation"
	// ModeSpec sets only the kind's spec field (SpecFieldOf): spec.suspend: true, or an Argo CD
	// Application's spec.syncPolicy.automated.enabled: false.
	ModeSpec Mode = "spec"
	// ModeBoth sets both: spec.suspend for kinds that honour only it (Flux today), and the
	// annotation to show why.
	ModeBoth Mode = "both"
)

// ParseMode reads a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case ModeAnnotation, ModeSpec, ModeBoth:
		return m, nil
	default:
		return "", fmt.Errorf("hold mode %q is not one of annotation, spec or both", s)
	}
}

func (m Mode) annotation() bool { return m == ModeAnnotation || m == ModeBoth }
func (m Mode) spec() bool       { return m == ModeSpec || m == ModeBoth }

// Verdict is what a target's gates say.
type Verdict struct {
	Hold bool
	// Reason says which gates hold the target and why; it becomes the suspend annotation's value.
	Reason string
	// Gates are the gates that deny ("namespace/name").
	Gates []string
	// DenyManualSyncs is true when one of Gates denies manual syncs (spec.manualSyncs: Deny) and
	// the target is a kind that can be synced by hand (an Argo CD Application).
	DenyManualSyncs bool
}

// Target is what the controller sees of a target in its metadata-only cache.
type Target struct {
	Annotations map[string]string
	Owned       Owned
}

// Desired is every field the controller should own on the target after the change.
type Desired struct {
	// Record is nil when the controller holds nothing.
	Record *Record
}

// Annotation is the value of the suspend annotation the controller sets, if it sets one.
func (d Desired) Annotation() (string, bool) {
	if d.Record == nil || !d.Record.has(ChangeAnnotation) {
		return "", false
	}
	return d.Record.Reason, true
}

// Spec reports whether the controller sets spec.suspend: true.
func (d Desired) Spec() bool { return d.Record != nil && d.Record.has(ChangeSpec) }

// Outcome names what a change means for the target, for Events.
type Outcome string

const (
	// OutcomeNone: nothing to say (no change, a new reason, or cleaning up after a yield).
	OutcomeNone Outcome = ""
	// OutcomeHeld: the target was free and is held now.
	OutcomeHeld Outcome = "Held"
	// OutcomeReleased: the hold ended and what the controller set was undone.
	OutcomeReleased Outcome = "Released"
	// OutcomeYielded: someone resumed the target while its gates deny; the controller lets go.
	OutcomeYielded Outcome = "HoldOverridden"
)

// Plan is the decision for one target.
type Plan struct {
	// Apply is false when the target already carries Desired.
	Apply   bool
	Desired Desired
	Outcome Outcome
	// Previous is the record found on the target, if any.
	Previous *Record
}

// Decide plans the change that makes a target carry what its verdict requires, holding it by
// mode. A target's mode matters only when a hold starts: later it is the record that says what
// to keep and what to undo.
func Decide(t Target, mode Mode, v Verdict) Plan {
	prev := currentRecord(t)
	p := Plan{Previous: prev}
	if !v.Hold {
		if t.Owned.any() {
			p.Apply = true
			if prev != nil && !prev.Yielded {
				p.Outcome = OutcomeReleased
			}
		}
		return p
	}

	_, suspended := t.Annotations[suspend.Annotation]
	next := newRecord(v.Gates, v.Reason)
	next.DenyManualSyncs = v.DenyManualSyncs
	switch {
	case prev == nil:
		if (mode.annotation() && !suspended) || t.Owned.Annotation {
			next.Set = append(next.Set, ChangeAnnotation)
		}
		if mode.spec() || t.Owned.Spec {
			next.Set = append(next.Set, ChangeSpec)
		}
		p.Outcome = OutcomeHeld
	case prev.Yielded:
		next.Yielded = true
		next.DenyManualSyncs = false
	default:
		lostSpec := prev.has(ChangeSpec) && !t.Owned.Spec
		lostAnnotation := prev.has(ChangeAnnotation) && !t.Owned.Annotation
		if lostSpec || (lostAnnotation && !suspended) {
			// Someone resumed the target: respect it, and give up what is still ours.
			next.Yielded = true
			next.DenyManualSyncs = false
			p.Outcome = OutcomeYielded
			break
		}
		if prev.has(ChangeSpec) {
			next.Set = append(next.Set, ChangeSpec)
		}
		// A suspend annotation someone rewrote is theirs now and still suspends. One that
		// someone else had set and has removed leaves the target to the controller's hold.
		if (prev.has(ChangeAnnotation) && !lostAnnotation) || (mode.annotation() && !suspended) {
			next.Set = append([]Change{ChangeAnnotation}, next.Set...)
		}
	}
	p.Desired.Record = &next
	p.Apply = !carries(t, next)
	return p
}

func currentRecord(t Target) *Record {
	value, ok := t.Annotations[RecordAnnotation]
	if !ok || !t.Owned.Record {
		// A record the controller does not own was written by someone else: not a hold of ours.
		return nil
	}
	r, err := ParseRecord(value)
	if err != nil {
		return nil
	}
	return &r
}

// carries reports whether the target already has exactly the fields of r, owned by the controller.
func carries(t Target, r Record) bool {
	prev := currentRecord(t)
	if prev == nil || !prev.equal(r) {
		return false
	}
	if r.has(ChangeAnnotation) != t.Owned.Annotation || r.has(ChangeSpec) != t.Owned.Spec {
		return false
	}
	if r.has(ChangeAnnotation) && t.Annotations[suspend.Annotation] != r.Reason {
		return false
	}
	if r.DenyManualSyncs != (t.Annotations[ManualSyncsAnnotation] == ManualSyncsDeny) {
		return false
	}
	return true
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// Ref identifies the target an apply is for. UID and ResourceVersion are preconditions: the
// apply fails with a conflict, rather than recreating the object, if the target was deleted, and
// it is never based on a stale view of someone's edit.
type Ref struct {
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID
	ResourceVersion                   string
}

// SpecOnlyApplyObject is the configuration that holds the target by its spec field alone, with no
// annotation: the last resort when the target's annotations leave no room for the hold's. The
// next reconcile finds no record and plans the full hold again, so this is kept only while the
// full hold does not fit; releasing needs no record, as the controller owns spec.suspend.
func SpecOnlyApplyObject(ref Ref) *unstructured.Unstructured {
	u := Desired{}.ApplyObject(ref)
	u.Object["spec"] = specFieldOfRef(ref).heldSpec()
	return u
}

// ApplyObject is the configuration to apply, with force, under FieldManager.
func (d Desired) ApplyObject(ref Ref) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	u.SetNamespace(ref.Namespace)
	u.SetName(ref.Name)
	u.SetUID(ref.UID)
	u.SetResourceVersion(ref.ResourceVersion)
	if d.Record == nil {
		return u
	}
	annotations := map[string]string{RecordAnnotation: d.Record.String()}
	if value, ok := d.Annotation(); ok {
		annotations[suspend.Annotation] = value
	}
	if d.Record.DenyManualSyncs {
		annotations[ManualSyncsAnnotation] = ManualSyncsDeny
	}
	u.SetAnnotations(annotations)
	if d.Spec() {
		u.Object["spec"] = specFieldOfRef(ref).heldSpec()
	}
	return u
}
