// Package v1alpha1 holds the scm.sluice.dev API: the SCM servers Sluice talks to (ScmProvider)
// and the git repositories it works on (ScmRepository).
//
// +k8s:deepcopy-gen=package
// +groupName=scm.sluice.dev
package v1alpha1
