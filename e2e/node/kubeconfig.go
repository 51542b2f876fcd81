package node

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// APIServerURL is the API server's address on the node.
func APIServerURL() string { return fmt.Sprintf("https://%s:%d", NodeIP, APIServerPort) }

// writeKubeconfigs writes one kubeconfig per client identity: admin, kubelet, kube-proxy,
// kube-controller-manager, kube-scheduler and coredns.
func (c Config) writeKubeconfigs() error {
	if err := os.MkdirAll(filepath.Dir(c.kubeconfig("admin")), 0o700); err != nil {
		return err
	}
	for _, who := range []string{"admin", "kubelet", "kube-proxy", "kube-controller-manager", "kube-scheduler", "coredns"} {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters[NodeName] = &clientcmdapi.Cluster{Server: APIServerURL(), CertificateAuthority: c.pki("ca.crt")}
		cfg.AuthInfos[who] = &clientcmdapi.AuthInfo{ClientCertificate: c.pki(who + ".crt"), ClientKey: c.pki(who + ".key")}
		cfg.Contexts[NodeName] = &clientcmdapi.Context{Cluster: NodeName, AuthInfo: who, Namespace: "default"}
		cfg.CurrentContext = NodeName
		if err := clientcmd.WriteToFile(*cfg, c.kubeconfig(who)); err != nil {
			return err
		}
	}
	return nil
}

// AdminConfig is a cluster-admin client configuration for the node.
func (p Paths) AdminConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.AdminKubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}
