package store

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	promoterinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions/promoter/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
)

var pullRequestsResource = schema.GroupResource{Group: promoterv1alpha1.GroupName, Resource: "pullrequests"}

func newPullRequestInformer(c sluice.Interface, ns string, idx cache.Indexers) cache.SharedIndexInformer {
	return promoterinformers.NewPullRequestInformer(c, ns, 0, idx)
}

// PullRequestList returns every PullRequest, sorted by namespace and name.
func (s *Store) PullRequestList() []*promoterv1alpha1.PullRequest {
	return listOf[*promoterv1alpha1.PullRequest](s.PullRequests)
}

// PullRequest returns the PullRequest namespace/name, or nil.
func (s *Store) PullRequest(namespace, name string) *promoterv1alpha1.PullRequest {
	obj, _ := s.PullRequests.Get(namespace, name).(*promoterv1alpha1.PullRequest)
	return obj
}
