// Package apply puts a planned set of objects (see pkg/manifest) into a cluster with
// server-side apply, waits for them to be healthy, and deletes what a plan prunes.
//
// Objects are applied in pkg/manifest's order: the first stage (CRDs and Namespaces), then a wait
// until every CRD applied is Established and the REST mapper has learnt its kind, then the rest,
// one kind rank after another, with the objects of one rank applied in parallel. Every object is
// applied with the given field manager and with force, so a field someone changed by hand is
// taken back, and carries the owner's labels, so a delete never touches an object it does not
// own.
//
// Health comes from the function given (pkg/health: a CEL check from the library, kstatus
// otherwise). Objects are read back by listing each kind in each namespace once a round, with the
// owner's labels as the selector, so waiting for 500 objects costs a few requests a round rather
// than 500.
package apply
