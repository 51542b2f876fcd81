package hold

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SpecField is the one field of a kind's spec that ChangeSpec sets, with the value that holds it.
// The controller applies only this field, so it owns nothing else of the spec: releasing gives
// the field up, and the API server removes it, along with any parent it created, unless someone
// else owns it too.
type SpecField struct {
	// Path is the field's path under spec.
	Path []string
	// Held is the value the field has while the controller holds the object.
	Held bool
	// Name is how people know the field, for logs and Events.
	Name string
}

// Suspend is Flux's spec.suspend: true, the spec field of every kind but Argo CD's Application.
var Suspend = SpecField{Path: []string{"suspend"}, Held: true, Name: "spec.suspend"}

// ArgoCDAutomatedSync is an Argo CD Application's switch for automated sync (Argo CD 3.1 and
// later). Set to false, it stops automated syncs and self-heal and keeps the rest of the user's
// automated policy (prune, selfHeal, allowEmpty) as it is; manual syncs stay possible. An
// Application without automated sync gets automated: {enabled: false}, which changes nothing
// while held, and which the API server removes whole on release, as no one else owns it.
var ArgoCDAutomatedSync = SpecField{Path: []string{"syncPolicy", "automated", "enabled"}, Held: false, Name: "spec.syncPolicy.automated.enabled"}

// ArgoCDApplications is the group and kind held by ArgoCDAutomatedSync.
var ArgoCDApplications = schema.GroupKind{Group: "argoproj.io", Kind: "Application"}

// SpecFieldOf is the spec field that holds objects of kind gk.
func SpecFieldOf(gk schema.GroupKind) SpecField {
	if gk == ArgoCDApplications {
		return ArgoCDAutomatedSync
	}
	return Suspend
}

// specFieldOfRef is the spec field of the target ref names.
func specFieldOfRef(ref Ref) SpecField {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return Suspend
	}
	return SpecFieldOf(gv.WithKind(ref.Kind).GroupKind())
}

// heldSpec is the spec to apply to hold a target by f.
func (f SpecField) heldSpec() map[string]any {
	var value any = f.Held
	for i := len(f.Path) - 1; i > 0; i-- {
		value = map[string]any{f.Path[i]: value}
	}
	return map[string]any{f.Path[0]: value}
}

// specFields are the spec fields a kind can be held by. A managedFields entry that owns any of
// them owns the kind's own: no kind has more than one (Flux's kinds have no syncPolicy, Argo CD's
// Application no suspend), so ownership is read without knowing the kind.
var specFields = []SpecField{Suspend, ArgoCDAutomatedSync}

// ownsSpecField reports whether the "f:spec" map of a managedFields entry owns a spec field.
func ownsSpecField(spec map[string]json.RawMessage) bool {
	for _, f := range specFields {
		if ownsPath(spec, f.Path) {
			return true
		}
	}
	return false
}

func ownsPath(fields map[string]json.RawMessage, path []string) bool {
	raw, ok := fields["f:"+path[0]]
	if !ok {
		return false
	}
	if len(path) == 1 {
		return true
	}
	var children map[string]json.RawMessage
	if err := json.Unmarshal(raw, &children); err != nil {
		return false
	}
	return ownsPath(children, path[1:])
}
