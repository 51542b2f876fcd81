package setup

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	sluiceinformers "github.com/sluicehq/sluice/api/generated/informers/externalversions"
	"github.com/sluicehq/sluice/pkg/runtime/crdwatch"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
)

// peerResources are the kinds of other Sluice groups that reverts read or write, each with the
// chart that owns its CRD. A cluster may lack them (those charts not installed yet, helm
// --skip-crds, CRDs managed elsewhere): then the controller keeps running and says so on every
// RevertCommit and RollbackPolicy, and starts watching each as soon as it is installed.
var peerResources = []peerResource{
	{schema.GroupResource{Group: "promoter.sluice.dev", Resource: "promotionstrategies"}, "PromotionStrategy", "promoter-controller"},
	{schema.GroupResource{Group: "promoter.sluice.dev", Resource: "pullrequests"}, "PullRequest", "promoter-controller"},
	{schema.GroupResource{Group: "commitstatus.sluice.dev", Resource: "commitstatuses"}, "CommitStatus", "commitstatus-controller"},
	{schema.GroupResource{Group: "scm.sluice.dev", Resource: "scmrepositories"}, "ScmRepository", "commitstatus-controller"},
	{schema.GroupResource{Group: "scm.sluice.dev", Resource: "scmproviders"}, "ScmProvider", "commitstatus-controller"},
}

type peerResource struct {
	schema.GroupResource
	kind  string
	chart string
}

// peers holds the informers of peer kinds. They are referenced objects, read whatever shard
// label the RevertCommits carry, so their factory is scoped by namespace only. Each informer
// runs under crdwatch.Kinds, from when its CRD is installed; the factory itself is never started.
type peers struct {
	factory sluiceinformers.SharedInformerFactory
	kinds   *crdwatch.Kinds
}

func newPeers(m *manager.Manager) (*peers, error) {
	kinds, err := crdwatch.NewKinds(m.Metadata)
	if err != nil {
		return nil, err
	}
	return &peers{
		factory: sluiceinformers.NewSharedInformerFactoryWithOptions(m.Sluice, 0, sluiceinformers.WithNamespace(m.Options.Namespace)),
		kinds:   kinds,
	}, nil
}

// Status reports whether every peer CRD is installed and its cache synced; when not, missing
// says which CRDs are not installed and the chart that installs each, for a Stalled message.
func (p *peers) Status() (ready bool, missing string) {
	all := make([]schema.GroupResource, len(peerResources))
	for i, r := range peerResources {
		all[i] = r.GroupResource
	}
	if gone := p.kinds.Missing(all...); len(gone) > 0 {
		return false, describeMissing(gone)
	}
	for _, gr := range all {
		if !p.kinds.Synced(gr) {
			return false, describeMissing(nil)
		}
	}
	return true, ""
}

// describeMissing names the peer CRDs missing, grouped by the chart that owns them.
func describeMissing(missing []schema.GroupResource) string {
	var charts []string
	kinds := map[string][]string{}
	for _, r := range peerResources {
		if !slices.Contains(missing, r.GroupResource) {
			continue
		}
		if kinds[r.chart] == nil {
			charts = append(charts, r.chart)
		}
		kinds[r.chart] = append(kinds[r.chart], r.kind)
	}
	if len(charts) == 0 {
		return "their CRDs are installed, and the controller is loading them; it carries on in a moment"
	}
	parts := make([]string, len(charts))
	for i, chart := range charts {
		parts[i] = fmt.Sprintf("the %s CRDs are not installed: install the %s chart", strings.Join(kinds[chart], ", "), chart)
	}
	return strings.Join(parts, "; ") + " (with replicaCount: 0 for its CRDs alone), or the sluice chart, which installs every chart;" +
		" the controller carries on as soon as they are installed, without a restart"
}

// start runs each peer informer the reconcilers took from the factory once its CRD is
// installed, on every replica so a standby is warm; /readyz waits for those installed at start.
// onChange runs when a peer CRD comes (its cache synced) or goes, to bring back what waited.
func (p *peers) start(m *manager.Manager, onChange ...func()) error {
	for _, r := range peerResources {
		informer, err := p.factory.ForResource(r.WithVersion("v1alpha1"))
		if err != nil {
			return fmt.Errorf("peer kind %s: %w", r.kind, err)
		}
		p.kinds.Add(r.GroupResource, informer.Informer())
	}
	for _, f := range onChange {
		p.kinds.OnChange(f)
	}
	p.kinds.Log(m.Log, describeMissing)
	m.WaitFor(p.kinds.HasSynced)
	m.AddServer(p.kinds.Run)
	return nil
}

// enqueueAll returns an onChange hook that enqueues every object of an informer.
func enqueueAll(inf cache.SharedIndexInformer, enqueue func(string)) func() {
	return func() {
		for _, key := range inf.GetStore().ListKeys() {
			enqueue(key)
		}
	}
}
