package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ClusterDomain is the suffix of Service names: <service>.<namespace>.svc.cluster.local.
const ClusterDomain = "cluster.local"

// dnsUser is CoreDNS's client certificate's user, bound to dnsRole only.
const (
	dnsUser = "sluice-e2e:coredns"
	dnsRole = "sluice-e2e:coredns"
	// dnsReadyPort is CoreDNS's ready plugin: 200 once the kubernetes plugin has synced.
	dnsReadyPort = 8181
)

// corefile: cluster names from the API server, and nothing else. There is no forwarder, so a
// name outside the cluster is NXDOMAIN: no query leaves the machine.
var corefile = template.Must(template.New("Corefile").Parse(`{{.Domain}}:53 in-addr.arpa:53 ip6.arpa:53 {
    bind {{.NodeIP}}
    errors
    ready {{.NodeIP}}:{{.ReadyPort}}
    kubernetes {{.Domain}} in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}} {{.Context}}
        pods disabled
        fallthrough in-addr.arpa ip6.arpa
    }
}
.:53 {
    bind {{.NodeIP}}
    errors
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`))

// startCoreDNS serves cluster DNS on the node's address, which every pod may reach: the
// kubelet gives pods that address as their nameserver.
func (c Config) startCoreDNS(ctx context.Context, kube kubernetes.Interface) (*process, error) {
	if err := grantDNSReads(ctx, kube); err != nil {
		return nil, err
	}
	var b strings.Builder
	if err := corefile.Execute(&b, map[string]any{
		"Domain": ClusterDomain, "NodeIP": NodeIP.String(), "ReadyPort": dnsReadyPort,
		"Kubeconfig": c.kubeconfig("coredns"), "Context": NodeName,
	}); err != nil {
		return nil, err
	}
	path := filepath.Join(c.Work, "Corefile")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	p, err := c.start("coredns", c.bin("coredns"), "-conf", path)
	if err != nil {
		return nil, err
	}
	ready := fmt.Sprintf("http://%s:%d/ready", NodeIP, dnsReadyPort)
	return p, c.waitFor(ctx, p, time.Minute, func(ctx context.Context) error { return httpOK(ctx, nil, ready) })
}

// grantDNSReads lets CoreDNS's user read what the kubernetes plugin watches, and nothing more.
func grantDNSReads(ctx context.Context, kube kubernetes.Interface) error {
	read := []string{"list", "watch"}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: dnsRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services", "namespaces"}, Verbs: read},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: dnsRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: dnsRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: dnsUser}},
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
