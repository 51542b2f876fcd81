package demo

import (
	"context"
)

func chapterFirstGate(ctx context.Context, s *Story) error {
	s.Step("the Sluice CRDs are installed and grouped under the `sluice` category")
	if _, err := s.Kubectl(ctx, "get", "crds", "-o", "custom-columns=NAME:.metadata.name,KIND:.spec.names.kind,SHORT:.spec.names.shortNames"); err != nil {
		return err
	}

	s.Step("a platform team creates a Gate for production, closed by hand")
	if err := s.Apply(ctx, `
apiVersion: gating.sluice.dev/v1alpha1
kind: Gate
metadata:
  name: prod
spec:
  closed: true
`); err != nil {
		return err
	}
	if _, err := s.Kubectl(ctx, "get", "sluice"); err != nil {
		return err
	}
	s.Step("kubectl explain documents every field from the CRD")
	_, err := s.Kubectl(ctx, "explain", "gate.spec.closed")
	return err
}
