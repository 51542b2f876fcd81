package setup

import (
	"context"
	"fmt"
	"net"

	"github.com/sluicehq/sluice/promoter-controller/internal/webhook"
)

// addWebhookReceiver serves the webhook receiver, when enabled, on every replica: a delivery
// about a repository brings its PromotionStrategies back at once. addPromotionStrategies comes
// first.
func (w *wiring) addWebhookReceiver() error {
	if !w.cfg.webhookEnabled() {
		return nil
	}
	m := w.m
	receiver := &webhook.Receiver{
		Kube: m.Kube, Client: m.Sluice, Providers: w.providerLister(), Repos: w.repoLister(),
		Strategies: m.SluiceInformers.Promoter().V1alpha1().PromotionStrategies().Lister(), Queue: w.fetches.Waking(w.strategies), Metrics: w.metrics,
		Leading: m.Leading, Ready: m.Probes.Ready, Log: m.Log,
	}
	ln := w.cfg.WebhookListener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", w.cfg.WebhookAddress); err != nil {
			return fmt.Errorf("webhook receiver on %s: %w", w.cfg.WebhookAddress, err)
		}
	}
	m.AddServer(func(ctx context.Context) error { return receiver.Serve(ctx, ln) })
	return nil
}
