package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

// kubeletConfig is the kubelet on this machine: cgroup v1 through cgroupfs (kubelet 1.36 refuses
// v1 unless failCgroupV1 is false), swap allowed, every listener on the node's address, CoreDNS
// on the node's address as the pods' nameserver (and not the machine's resolv.conf, so a pod
// resolves cluster names only), and eviction thresholds low enough that a busy shared disk does
// not evict the suite's pods.
var kubeletConfig = template.Must(template.New("kubelet.yaml").Parse(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {{.NodeIP}}
port: 10250
readOnlyPort: 0
healthzBindAddress: {{.NodeIP}}
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: {{.CA}}}
authorization:
  mode: Webhook
tlsCertFile: {{.ServingCert}}
tlsPrivateKeyFile: {{.ServingKey}}
containerRuntimeEndpoint: unix://{{.Socket}}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
resolvConf: ""
clusterDNS: [{{.NodeIP}}]
clusterDomain: {{.ClusterDomain}}
podCIDR: {{.PodCIDR}}
maxPods: 60
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%"
  imagefs.available: "1%"
  nodefs.inodesFree: "1%"
shutdownGracePeriod: 0s
`))

func (c Config) startKubelet() (*process, error) {
	var b strings.Builder
	if err := kubeletConfig.Execute(&b, map[string]string{
		"NodeIP": NodeIP.String(), "CA": c.pki("ca.crt"), "Socket": c.ContainerdSocket(),
		"ServingCert": c.pki("kubelet-serving.crt"), "ServingKey": c.pki("kubelet-serving.key"),
		"PodCIDR": PodCIDR.String(), "ClusterDomain": ClusterDomain,
	}); err != nil {
		return nil, err
	}
	config := filepath.Join(c.Work, "kubelet.yaml")
	if err := os.WriteFile(config, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return c.start("kubelet", c.bin("kubelet"),
		"--config="+config,
		"--kubeconfig="+c.kubeconfig("kubelet"),
		"--root-dir="+c.kubeletRoot(),
		"--hostname-override="+NodeName,
		"--node-ip="+NodeIP.String())
}

// kubeProxyConfig programs Services with iptables, treats only ClusterCIDR as local, serves
// NodePorts on the node's address only, and leaves the machine's conntrack settings and
// route_localnet alone.
var kubeProxyConfig = template.Must(template.New("kube-proxy.yaml").Parse(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: {{.ClusterCIDR}}
hostnameOverride: {{.NodeName}}
bindAddress: {{.NodeIP}}
healthzBindAddress: {{.NodeIP}}:10256
metricsBindAddress: {{.NodeIP}}:10249
nodePortAddresses: ["{{.NodeIP}}/32"]
clientConnection:
  kubeconfig: {{.Kubeconfig}}
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`))

// startKubeProxy starts kube-proxy and waits until it has programmed the kubernetes Service,
// so that a pod's first packet to 10.96.0.1 already reaches the API server on the node.
func (c Config) startKubeProxy(ctx context.Context) (*process, error) {
	var b strings.Builder
	if err := kubeProxyConfig.Execute(&b, map[string]string{
		"ClusterCIDR": ClusterCIDR.String(), "NodeName": NodeName, "NodeIP": NodeIP.String(),
		"Kubeconfig": c.kubeconfig("kube-proxy"),
	}); err != nil {
		return nil, err
	}
	config := filepath.Join(c.Work, "kube-proxy.yaml")
	if err := os.WriteFile(config, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	p, err := c.start("kube-proxy", c.bin("kube-proxy"), "--config="+config)
	if err != nil {
		return nil, err
	}
	return p, c.waitFor(ctx, p, 2*time.Minute, func(context.Context) error { return kubernetesServiceProgrammed() })
}

func kubernetesServiceProgrammed() error {
	out, err := run("iptables-save", "-t", "nat")
	if err != nil {
		return err
	}
	want := "-d " + KubernetesServiceIP.String() + "/32"
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "-A KUBE-SERVICES") && strings.Contains(line, want) {
			return nil
		}
	}
	return errNotYet("kube-proxy has not programmed the kubernetes Service")
}

type errNotYet string

func (e errNotYet) Error() string { return string(e) }
