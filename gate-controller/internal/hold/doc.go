// Package hold decides how the gate-controller holds and releases a target: which of the fields
// it manages a target should carry for what its gates say, given what the target carries now.
//
// The controller writes targets with server-side apply under its own field manager. The applied
// configuration is always the complete set of fields the controller wants to own, so one apply
// both holds and releases: a field left out is given up, and the API server removes it only if
// no one else owns it too. That is what makes the controller undo exactly what it changed and
// never resume an object someone else suspended: if a person or Flux had already set
// spec.suspend: true, the controller only co-owns the field and releasing leaves it true.
//
// The API server's managedFields say which fields the controller still owns, and the record
// annotation (RecordAnnotation) says what it set when it held the target. A field in the record
// that the controller no longer owns was changed by someone else. The controller never takes it
// back: if that change resumed the target, the controller yields until the gates allow again.
package hold
