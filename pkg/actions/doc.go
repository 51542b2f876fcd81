// Package actions holds the writes a person makes on Sluice objects, shared by the web UI and
// the kubectl sluice plugin so both do exactly the same thing: close and open a gate, approve a
// revision through it or remove that approval, suspend and resume an object with a reason,
// revert an environment with a RevertCommit, and roll a ManifestRelease back to a snapshot.
//
// Every function takes the acting client explicitly: the person's own (the kubeconfig in the
// plugin, an impersonating client in the UI), so the API server's RBAC decides, and the field
// manager that names the tool in managedFields.
package actions
