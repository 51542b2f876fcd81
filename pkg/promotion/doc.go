// Package promotion holds the promotion rules of the promoter-controller as pure functions:
// the order of environments (linear or a DAG), the four eligibility rules of the GitOps
// promotion proposal, the aggregation of commit statuses, and the bounded lists kept in status.
// Nothing here touches git or the cluster, so every rule is tested with a table.
//
// The four rules, for a change proposed to environment E:
//  1. No moving backwards: the proposed dry SHA must not be older, on the dry branch, than the
//     active dry SHA of any environment after E.
//  2. Every environment before E must be active on the proposed dry SHA.
//  3. The active commit statuses of those earlier environments must all pass.
//  4. The proposed commit statuses of E's proposed commit must all pass.
//
// E's gates must also allow, and no rollback may hold the proposed dry SHA: after a revert of E
// (a RevertCommit, rollback.sluice.dev), the reverted dry SHA and every older one stay out of E
// until a newer one (a fix forward) comes or a person lifts the hold. "Before" and "after"
// follow the environments' after lists, transitively, so in a DAG a fan-in environment waits for
// every branch that leads to it.
package promotion
