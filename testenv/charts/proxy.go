package charts

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
)

// versionProxy is a plain-HTTP proxy on loopback in front of the local control plane that answers
// /version with KubeVersion. kube-apiserver built from its Go module carries no version stamp
// (v0.0.0-master), which every chart's kubeVersion constraint refuses as a real cluster never
// would. Everything else, authentication included, goes through unchanged with the admin
// credentials of cfg.
type versionProxy struct {
	URL      string
	listener net.Listener
	server   *http.Server
}

func startVersionProxy(cfg *rest.Config) (*versionProxy, error) {
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	minor, _, _ := strings.Cut(strings.TrimPrefix(KubeVersion, "1."), ".")
	stamped, err := json.Marshal(version.Info{Major: "1", Minor: minor, GitVersion: "v" + KubeVersion, Platform: "linux/amd64"})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(stamped)
	})
	mux.Handle("/", proxy)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &versionProxy{URL: fmt.Sprintf("http://%s", ln.Addr()), listener: ln, server: &http.Server{Handler: mux}}
	go func() { _ = p.server.Serve(ln) }()
	return p, nil
}

func (p *versionProxy) Close() error { return p.server.Close() }
