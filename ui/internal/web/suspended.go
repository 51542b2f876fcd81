package web

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gatingv1alpha1 "github.com/sluicehq/sluice/api/gating/v1alpha1"
	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/suspend"
)

// suspendState is whether a suspendable object is suspended, by its spec.suspend or by the
// annotation the UI's Suspend sets, and why: a page that read only spec.suspend would still
// offer "Suspend…" after a suspend from the UI.
func suspendState(obj any) suspend.State {
	switch o := obj.(type) {
	case *promoterv1alpha1.PromotionStrategy:
		return suspend.Get(o, o.Spec.Suspend)
	case *gatingv1alpha1.Gate:
		return suspend.Get(o, o.Spec.Suspend)
	case *healthv1alpha1.HealthCheck:
		return suspend.Get(o, o.Spec.Suspend)
	case *rollbackv1alpha1.RollbackPolicy:
		return suspend.Get(o, o.Spec.Suspend)
	case *rollbackv1alpha1.ManifestRelease:
		return suspend.Get(o, o.Spec.Suspend)
	}
	return suspend.State{}
}

// suspendKinds are the kinds Suspend and Resume apply to, in the order a chooser lists them.
var suspendKinds = []string{"PromotionStrategy", "Gate", "HealthCheck", "RollbackPolicy", "ManifestRelease"}

// suspendTarget returns the object of kind namespace/name the store holds, or nil.
func (s *Server) suspendTarget(kind, namespace, name string) metav1.Object {
	var obj metav1.Object
	switch kind {
	case "PromotionStrategy":
		if o := s.Store.PromotionStrategy(namespace, name); o != nil {
			obj = o
		}
	case "Gate":
		if o := s.Store.Gate(namespace, name); o != nil {
			obj = o
		}
	case "HealthCheck":
		if o := s.Store.HealthCheck(namespace, name); o != nil {
			obj = o
		}
	case "RollbackPolicy":
		if o := s.Store.RollbackPolicy(namespace, name); o != nil {
			obj = o
		}
	case "ManifestRelease":
		if o := s.Store.ManifestRelease(namespace, name); o != nil {
			obj = o
		}
	}
	return obj
}

// suspendButton is what a page needs to draw an object's Suspend… or Resume… button.
type suspendButton struct {
	Kind, Namespace, Name string
	State                 suspend.State
}

// suspendButtonOf reads obj's button; kind is the UI's name of obj's kind.
func suspendButtonOf(kind string, obj metav1.Object) suspendButton {
	return suspendButton{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), State: suspendState(obj)}
}
