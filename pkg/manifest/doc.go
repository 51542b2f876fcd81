// Package manifest turns a set of raw manifests into a plan for applying them: parsed objects in
// apply order, an inventory of what they are, what an earlier inventory holds that the new one
// does not (to prune), and the CRD changes that would lose data (never made).
//
// It is pure: facts about the cluster (which kinds are namespaced, what a live CRD stores, whether
// objects of a CRD exist) come in as arguments, so every rule is tested without an API server.
//
// # Order
//
// Objects are applied in two stages. First CustomResourceDefinitions and Namespaces: the rest
// may need them, and a new CRD must be established before its objects are accepted. Then
// everything else, by kind: policy and identity (quotas, ServiceAccounts, RBAC), configuration
// (Secrets, ConfigMaps), storage, Services, workloads, then custom resources, and admission
// webhooks and policies last, so a webhook never refuses objects of its own release before its
// Service is there. Within a kind, by namespace and name, so a plan is the same whatever the file
// order. Pruning goes in the reverse order: webhooks first, CRDs and Namespaces last.
//
// # CRDs
//
// Kubernetes cannot roll a CRD back, and deleting one deletes every object of its kind. So a plan
// is blocked, with a message saying what a person must do, when it would
//   - delete a CRD that still has objects, or
//   - apply a CRD without a version that is still in the live CRD's status.storedVersions
//     (objects may still be stored in it; the API server would refuse it too).
package manifest
