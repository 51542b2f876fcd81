package scmimport

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/url"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm"
	"github.com/sluicehq/sluice/pkg/text"
)

// Limits of the CommitStatus fields an imported status fills.
const (
	maxName        = 255
	maxDescription = 1024
	maxURL         = 2048
)

// Observed is everything one import decides from, read before deciding.
type Observed struct {
	// Strategy names the owner of the imported objects.
	Namespace, Strategy string
	UID                 types.UID
	Repository          string
	// Read holds the statuses the SCM holds for each commit the strategy tracks. A commit
	// missing from Read was not read (its read failed): its imported objects are kept as they are.
	Read map[string][]scm.ReadStatus
	// Local are the (sha, name) pairs that CommitStatuses written in this cluster mirror to the
	// SCM: importing them would count the same verdict twice under two names.
	Local map[[2]string]bool
	// Existing are the imported CommitStatuses this strategy owns now.
	Existing []*commitstatusv1alpha1.CommitStatus
	// SHAs are the commits the strategy tracks now.
	SHAs []string
	// ShardLabels are the strategy's values of the keys --watch-label-selector names: imported
	// objects carry them, so they match the selector the strategy matches and stay in the cache
	// of the shard that imports them.
	ShardLabels map[string]string
}

// ShardLabels picks from labels the values of keys (the keys a shard's selector names).
func ShardLabels(labels map[string]string, keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := labels[k]; ok {
			out[k] = v
		}
	}
	return out
}

// Plan is what apply writes.
type Plan struct {
	Namespace string
	Create    []*commitstatusv1alpha1.CommitStatus
	// Update holds the existing objects with the new spec, labels and annotations.
	Update []*commitstatusv1alpha1.CommitStatus
	// Delete names objects whose commit the strategy no longer tracks, or whose status the SCM
	// no longer holds.
	Delete []string
}

// Empty reports whether nothing is to be written.
func (p Plan) Empty() bool { return len(p.Create)+len(p.Update)+len(p.Delete) == 0 }

// TrackedSHAs returns the proposed and active hydrated commits of every environment, each once,
// sorted.
func TrackedSHAs(ps *promoterv1alpha1.PromotionStrategy) []string {
	seen := map[string]bool{}
	for _, e := range ps.Status.Environments {
		for _, sha := range []string{e.Proposed.HydratedSHA, e.Active.HydratedSHA} {
			if scm.ValidateSHA(sha) == nil {
				seen[sha] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for sha := range seen {
		out = append(out, sha)
	}
	sort.Strings(out)
	return out
}

// Decide turns what was observed into writes. It reads and writes nothing.
func Decide(o Observed) Plan {
	tracked := map[string]bool{}
	for _, sha := range o.SHAs {
		tracked[sha] = true
	}
	desired := map[string]*commitstatusv1alpha1.CommitStatus{}
	for sha, statuses := range o.Read {
		if !tracked[sha] {
			continue
		}
		for _, st := range statuses {
			if o.Local[[2]string{sha, st.Name}] || commitstatusv1alpha1.KeyForName(st.Name) == "" {
				continue
			}
			cs := desiredObject(o, st)
			desired[cs.Name] = cs
		}
	}
	plan := Plan{Namespace: o.Namespace}
	existing := map[string]bool{}
	for _, cur := range o.Existing {
		existing[cur.Name] = true
		want, ok := desired[cur.Name]
		_, read := o.Read[cur.Spec.SHA]
		switch {
		case ok:
			if changed(cur, want) {
				next := cur.DeepCopy()
				next.Labels, next.Annotations, next.Spec, next.OwnerReferences = want.Labels, want.Annotations, want.Spec, want.OwnerReferences
				plan.Update = append(plan.Update, next)
			}
		case !tracked[cur.Spec.SHA] || read:
			plan.Delete = append(plan.Delete, cur.Name)
		}
	}
	for _, name := range sortedKeys(desired) {
		if !existing[name] {
			plan.Create = append(plan.Create, desired[name])
		}
	}
	sort.Strings(plan.Delete)
	return plan
}

// ObjectName is the name of the imported CommitStatus of one check on one commit for one
// strategy: stable, so a re-read updates the same object, and unique per source and name.
func ObjectName(strategy, sha string, source scm.StatusSource, name string) string {
	sum := sha256.Sum256([]byte(strategy + "\x00" + sha + "\x00" + string(source) + "\x00" + name))
	return "scm-" + sha[:7] + "-" + hex.EncodeToString(sum[:])[:16]
}

func desiredObject(o Observed, st scm.ReadStatus) *commitstatusv1alpha1.CommitStatus {
	blockOwnerDeletion := false
	labels := make(map[string]string, len(o.ShardLabels)+2)
	for k, v := range o.ShardLabels {
		labels[k] = v
	}
	labels[commitstatusv1alpha1.KeyLabel] = commitstatusv1alpha1.KeyForName(st.Name)
	labels[commitstatusv1alpha1.ImportedLabel] = "true"
	cs := &commitstatusv1alpha1.CommitStatus{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   o.Namespace,
			Name:        ObjectName(o.Strategy, st.SHA, st.Source, st.Name),
			Labels:      labels,
			Annotations: map[string]string{commitstatusv1alpha1.SourceAnnotation: string(st.Source)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: promoterv1alpha1.SchemeGroupVersion.String(), Kind: "PromotionStrategy",
				Name: o.Strategy, UID: o.UID, BlockOwnerDeletion: &blockOwnerDeletion,
			}},
		},
		Spec: commitstatusv1alpha1.CommitStatusSpec{
			RepositoryRef: commitstatusv1alpha1.RepositoryReference{Name: o.Repository},
			SHA:           st.SHA,
			Name:          text.Truncate(st.Name, maxName),
			Description:   text.Truncate(st.Description, maxDescription),
			Phase:         commitstatusv1alpha1.CommitStatusPhase(st.State),
			URL:           webURL(st.TargetURL),
		},
	}
	if !st.State.Valid() {
		cs.Spec.Phase = commitstatusv1alpha1.CommitStatusPending
	}
	return cs
}

// webURL keeps an absolute http or https link the CRD admits, and drops anything else.
func webURL(raw string) string {
	if raw == "" || len(raw) > maxURL {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return raw
}

// changed compares labels exactly: imported objects are read-only to users, so every label is
// the import's, and a shard label the strategy dropped must go too.
func changed(cur, want *commitstatusv1alpha1.CommitStatus) bool {
	if cur.Spec != want.Spec || len(cur.OwnerReferences) != 1 || cur.OwnerReferences[0].UID != want.OwnerReferences[0].UID {
		return true
	}
	if !maps.Equal(cur.Labels, want.Labels) {
		return true
	}
	for k, v := range want.Annotations {
		if cur.Annotations[k] != v {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
