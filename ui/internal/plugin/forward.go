package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// forwardUI finds the in-cluster UI and forwards flags.listen to it through the API server
// (the pods/portforward subresource, over SPDY, as kubectl port-forward does), prints the URL
// and opens it, until ctx ends or the forward breaks. The pages are the in-cluster UI's, and so
// are its rules: read-only without an authenticating proxy (the chart's default).
func forwardUI(ctx context.Context, flags uiFlags, stdout, stderr io.Writer) error {
	restConfig, namespace, err := flags.clientConfig()
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	target, err := findUI(ctx, kube, namespace, flags.service)
	if err != nil {
		return err
	}
	transport, upgrader, err := spdy.RoundTripperFor(restConfig)
	if err != nil {
		return err
	}
	url := kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(target.Namespace).Name(target.Pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	host, port, err := net.SplitHostPort(flags.listen)
	if err != nil {
		return err
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(dialer, []string{host}, []string{port + ":" + strconv.Itoa(int(target.Port))}, stop, ready, io.Discard, stderr)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	select {
	case err := <-done:
		return forwardError(target, err)
	case <-ctx.Done():
		close(stop)
		<-done
		return nil
	case <-ready:
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) == 0 {
		close(stop)
		<-done
		return fmt.Errorf("the port-forward to pod %s/%s has no local port: %v", target.Namespace, target.Pod, err)
	}
	page := "http://" + net.JoinHostPort(host, strconv.Itoa(int(ports[0].Local))) + "/"
	fmt.Fprintf(stdout, "Sluice UI of the cluster (Service %s/%s, pod %s), through a port-forward: %s\nWhat you may do there is what the in-cluster UI allows; run without --port-forward to act as you. Press Ctrl-C to stop.\n",
		target.Namespace, target.Service, target.Pod, page)
	if flags.open {
		if err := openBrowser(page); err != nil {
			fmt.Fprintf(stderr, "cannot open a browser (%v): open %s yourself\n", err, page)
		}
	}
	select {
	case err := <-done:
		return forwardError(target, err)
	case <-ctx.Done():
		close(stop)
		<-done
		return nil
	}
}

func forwardError(t uiTarget, err error) error {
	if err == nil {
		err = errors.New("it ended")
	}
	return fmt.Errorf("port-forward to pod %s/%s port %d: %w", t.Namespace, t.Pod, t.Port, err)
}
