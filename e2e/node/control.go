package node

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// waitFor polls check every 100ms until it passes, the process p exits, ctx ends or timeout
// passes.
func (c Config) waitFor(ctx context.Context, p *process, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := c.alive(p); err != nil {
			return err
		}
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %s: %w", p.name, timeout, err)
		case <-tick.C:
		}
	}
}

func (c Config) startEtcd(ctx context.Context) (*process, error) {
	client := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", etcdPeerPort)
	p, err := c.start("etcd", c.bin("etcd"),
		"--name="+NodeName, "--data-dir="+c.etcdData(),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster="+NodeName+"="+peer,
		// A throwaway cluster: losing it on a power cut costs nothing, and fsync costs seconds.
		"--unsafe-no-fsync=true")
	if err != nil {
		return nil, err
	}
	return p, c.waitFor(ctx, p, time.Minute, func(ctx context.Context) error { return httpOK(ctx, nil, client+"/health") })
}

func (c Config) startAPIServer() (*process, error) {
	return c.start("kube-apiserver", c.bin("kube-apiserver"),
		"--advertise-address="+NodeIP.String(), "--bind-address="+NodeIP.String(),
		"--secure-port="+strconv.Itoa(APIServerPort),
		"--etcd-servers="+fmt.Sprintf("http://127.0.0.1:%d", etcdPort),
		"--service-cluster-ip-range="+ServiceCIDR.String(),
		"--tls-cert-file="+c.pki("apiserver.crt"), "--tls-private-key-file="+c.pki("apiserver.key"),
		"--client-ca-file="+c.pki("ca.crt"),
		"--kubelet-client-certificate="+c.pki("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+c.pki("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+c.pki("ca.crt"),
		// The node's name does not resolve: kubectl logs and exec reach the kubelet by address.
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+c.pki("sa.pub"),
		"--service-account-signing-key-file="+c.pki("sa.key"),
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		"--cert-dir="+c.pki("apiserver-generated"),
		"--profiling=false")
}

// startControllerManager runs the controllers a cluster needs to start pods: it creates every
// namespace's default ServiceAccount and kube-root-ca.crt, and gives the node its pod range.
func (c Config) startControllerManager() (*process, error) {
	return c.start("kube-controller-manager", c.bin("kube-controller-manager"),
		"--kubeconfig="+c.kubeconfig("kube-controller-manager"),
		"--authentication-kubeconfig="+c.kubeconfig("kube-controller-manager"),
		"--authorization-kubeconfig="+c.kubeconfig("kube-controller-manager"),
		"--bind-address="+NodeIP.String(), "--secure-port=10257",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--root-ca-file="+c.pki("ca.crt"),
		"--service-account-private-key-file="+c.pki("sa.key"),
		"--cluster-signing-cert-file="+c.pki("ca.crt"), "--cluster-signing-key-file="+c.pki("ca.key"),
		"--allocate-node-cidrs=true", "--cluster-cidr="+ClusterCIDR.String(), "--node-cidr-mask-size=24",
		"--service-cluster-ip-range="+ServiceCIDR.String())
}

func (c Config) startScheduler() (*process, error) {
	return c.start("kube-scheduler", c.bin("kube-scheduler"),
		"--kubeconfig="+c.kubeconfig("kube-scheduler"),
		"--authentication-kubeconfig="+c.kubeconfig("kube-scheduler"),
		"--authorization-kubeconfig="+c.kubeconfig("kube-scheduler"),
		"--bind-address="+NodeIP.String(), "--secure-port=10259",
		"--leader-elect=false")
}

// httpOK GETs url (with client, or a plain one) and fails unless it answers 200.
func httpOK(ctx context.Context, client *http.Client, url string) error {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
