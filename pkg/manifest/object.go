package manifest

import (
	"cmp"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Ref names one object. Its identity is group, kind, namespace and name; Version is the version
// it was applied in, kept so it can be read back.
type Ref struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// RefOf returns the Ref of an object.
func RefOf(obj *unstructured.Unstructured) Ref {
	gvk := obj.GroupVersionKind()
	return Ref{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// ID is the identity of the object, in the inventory format of Flux: namespace_name_group_kind.
func (r Ref) ID() string {
	return r.Namespace + "_" + r.Name + "_" + r.Group + "_" + r.Kind
}

// GroupKind of the object.
func (r Ref) GroupKind() schema.GroupKind { return schema.GroupKind{Group: r.Group, Kind: r.Kind} }

// GroupVersionKind of the object.
func (r Ref) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// String is how a person reads it: Deployment/flux-system/source-controller.
func (r Ref) String() string {
	kind := r.Kind
	if r.Group != "" {
		kind += "." + r.Group
	}
	if r.Namespace == "" {
		return kind + "/" + r.Name
	}
	return kind + "/" + r.Namespace + "/" + r.Name
}

// IsCRD reports whether the object is a CustomResourceDefinition.
func (r Ref) IsCRD() bool { return r.Group == crdGroup && r.Kind == "CustomResourceDefinition" }

// IsNamespace reports whether the object is a Namespace.
func (r Ref) IsNamespace() bool { return r.Group == "" && r.Kind == "Namespace" }

const crdGroup = "apiextensions.k8s.io"

// compare orders Refs for applying: by stage and kind rank, then namespace, then name.
func compare(a, b Ref) int {
	return cmp.Or(
		cmp.Compare(rank(a), rank(b)),
		strings.Compare(a.Group, b.Group),
		strings.Compare(a.Kind, b.Kind),
		strings.Compare(a.Namespace, b.Namespace),
		strings.Compare(a.Name, b.Name),
	)
}

// kindRanks is the apply order of built-in kinds (see the package documentation); "group/Kind".
var kindRanks = func() map[string]int {
	order := []string{
		"apiextensions.k8s.io/CustomResourceDefinition", "/Namespace",
		"/ResourceQuota", "/LimitRange", "scheduling.k8s.io/PriorityClass",
		"/ServiceAccount", "rbac.authorization.k8s.io/ClusterRole", "rbac.authorization.k8s.io/ClusterRoleBinding",
		"rbac.authorization.k8s.io/Role", "rbac.authorization.k8s.io/RoleBinding",
		"/Secret", "/ConfigMap", "storage.k8s.io/StorageClass", "/PersistentVolume", "/PersistentVolumeClaim",
		"/Service", "/Endpoints", "discovery.k8s.io/EndpointSlice", "networking.k8s.io/NetworkPolicy",
		"policy/PodDisruptionBudget", "apps/DaemonSet", "/Pod", "/ReplicationController", "apps/ReplicaSet",
		"apps/Deployment", "apps/StatefulSet", "autoscaling/HorizontalPodAutoscaler", "batch/Job", "batch/CronJob",
		"networking.k8s.io/IngressClass", "networking.k8s.io/Ingress", "apiregistration.k8s.io/APIService",
	}
	ranks := make(map[string]int, len(order)+4)
	for i, k := range order {
		ranks[k] = i
	}
	last := []string{
		"admissionregistration.k8s.io/MutatingWebhookConfiguration", "admissionregistration.k8s.io/ValidatingWebhookConfiguration",
		"admissionregistration.k8s.io/ValidatingAdmissionPolicy", "admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding",
	}
	for i, k := range last {
		ranks[k] = customRank + 1 + i
	}
	return ranks
}()

// customRank is where kinds not listed go: custom resources, after every built-in workload.
const customRank = 1000

func rank(r Ref) int {
	if n, ok := kindRanks[r.Group+"/"+r.Kind]; ok {
		return n
	}
	return customRank
}

// SameRank reports whether a and b are applied in the same step: the same kind rank, so neither
// needs the other first.
func SameRank(a, b Ref) bool {
	return rank(a) == rank(b) && (rank(a) != customRank || a.GroupKind() == b.GroupKind())
}

// InFirstStage reports whether the object is applied, and waited for, before the others.
func InFirstStage(r Ref) bool { return r.IsCRD() || r.IsNamespace() }

func describe(file string, doc int) string {
	return fmt.Sprintf("%s (document %d)", file, doc)
}
