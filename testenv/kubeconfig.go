package testenv

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes cfg as a kubeconfig file with one context named "sluice", readable only
// by its owner because it holds admin credentials. An impersonating cfg (Env.Impersonate) gives a
// kubeconfig that acts as that ServiceAccount, for a controller process run under a chart's RBAC.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["sluice"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos["sluice"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
		// A config from Env.Impersonate keeps acting as its ServiceAccount in a process.
		Impersonate:       cfg.Impersonate.UserName,
		ImpersonateUID:    cfg.Impersonate.UID,
		ImpersonateGroups: cfg.Impersonate.Groups,
	}
	kc.Contexts["sluice"] = &clientcmdapi.Context{Cluster: "sluice", AuthInfo: "sluice", Namespace: "default"}
	kc.CurrentContext = "sluice"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("encode kubeconfig: %w", err)
	}
	return os.WriteFile(path, data, 0o600)
}

// Impersonate returns a copy of the admin config that acts as a ServiceAccount, so a test can
// prove that a chart's RBAC is enough for its controller and no more.
func (e *Env) Impersonate(namespace, serviceAccount string) *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", namespace, serviceAccount),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	return cfg
}
