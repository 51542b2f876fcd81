package plugin

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// uiFlags are the flags of kubectl sluice ui.
type uiFlags struct {
	kubeconfig, context, namespace, listen string
	open                                   bool
	// portForward reaches the in-cluster UI through a port-forward instead of serving one here;
	// service names its Service.
	portForward bool
	service     string
}

var errHelp = errors.New("help requested")

func parseUIFlags(args []string, stderr io.Writer) (uiFlags, error) {
	var f uiFlags
	fs := flag.NewFlagSet("kubectl sluice ui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to the kubeconfig; empty uses $KUBECONFIG or ~/.kube/config, as kubectl does.")
	fs.StringVar(&f.context, "context", "", "The kubeconfig context to use; empty uses the current one.")
	fs.StringVar(&f.namespace, "namespace", "", "Show only this namespace (for a user who may not list every namespace); empty shows all. With --port-forward: the namespace the UI is installed in; empty looks in every namespace.")
	fs.StringVar(&f.namespace, "n", "", "Short for --namespace.")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8092", "Loopback address to serve on; port 0 picks a free one.")
	fs.BoolVar(&f.portForward, "port-forward", false, "Open the UI installed in the cluster (charts/ui) through a port-forward to its Service, instead of serving it here with your kubeconfig.")
	fs.StringVar(&f.service, "service", "", "With --port-forward: the UI's Service, in -n (else the kubeconfig's namespace); empty finds the one labelled "+uiServiceLabel+".")
	fs.BoolVar(&f.open, "open", true, "Open the UI in the browser ($BROWSER, else xdg-open or open).")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: kubectl sluice ui [flags]\n\nRuns the Sluice web UI on this machine with your kubeconfig, as kubectl would, and opens it.\nWith --port-forward, opens the UI installed in the cluster through a port-forward instead.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return f, errHelp
		}
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if f.service != "" && !f.portForward {
		return f, errors.New("--service names the in-cluster UI's Service: use it with --port-forward")
	}
	return f, checkLoopback(f.listen)
}

// checkLoopback refuses a listen address other than loopback: in local mode every request acts
// with the kubeconfig's rights, so no other machine may reach it.
func checkLoopback(listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %q is not host:port: %w", listen, err)
	}
	if host == "localhost" {
		return nil
	}
	if addr, err := netip.ParseAddr(host); err == nil && addr.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--listen %q: the UI acts with your kubeconfig, so it serves on a loopback address only (such as 127.0.0.1:8092)", listen)
}

// restConfig loads the kubeconfig as kubectl does: --kubeconfig, else $KUBECONFIG, else
// ~/.kube/config, with --context.
func (f uiFlags) restConfig() (*rest.Config, error) {
	cfg, err := f.loader().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster access: set --kubeconfig or $KUBECONFIG: %w", err)
	}
	return cfg, nil
}

// clientConfig is restConfig, and the namespace to look for the in-cluster UI in: -n, else the
// kubeconfig's namespace when a Service is named, else every namespace ("").
func (f uiFlags) clientConfig() (*rest.Config, string, error) {
	cfg, err := f.restConfig()
	if err != nil {
		return nil, "", err
	}
	if f.namespace != "" || f.service == "" {
		return cfg, f.namespace, nil
	}
	ns, _, err := f.loader().Namespace()
	return cfg, ns, err
}

func (f uiFlags) loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
}
