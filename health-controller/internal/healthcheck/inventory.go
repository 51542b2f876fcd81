package healthcheck

// A Kustomization or Application target stands for the objects its inventory lists: expand
// reads the source from its watch and adds them to the plan.

import (
	"errors"
	"fmt"

	healthv1alpha1 "github.com/sluicehq/sluice/api/health/v1alpha1"
	"github.com/sluicehq/sluice/health-controller/internal/sources"
)

// expand reads a synced source and adds the objects it lists. It returns false while the
// source's watch has not listed yet.
func (p *plan) expand(r Reader, src source) (bool, error) {
	if !src.served {
		p.results = append(p.results, notServed(src.gk.WithVersion(""), src.namespace, src.name))
		return true, nil
	}
	synced, watchErr := r.State(src.kind.scope)
	if !synced && watchErr == nil {
		return false, nil
	}
	self := healthv1alpha1.ResourceHealth{APIVersion: src.kind.gvk.GroupVersion().String(), Kind: src.gk.Kind, Namespace: src.namespace, Name: src.name}
	if watchErr != nil {
		self.Status, self.Message = healthv1alpha1.StatusUnknown, watchProblem(src.kind.scope, watchErr)
		p.results = append(p.results, self)
		return true, nil
	}
	obj, found, err := r.Get(src.kind.scope, src.namespace, src.name)
	if err != nil {
		return false, err
	}
	if !found {
		self.Status, self.Message = healthv1alpha1.StatusNotFound, fmt.Sprintf("%s %s/%s not found", src.gk.Kind, src.namespace, src.name)
		p.results = append(p.results, self)
		return true, nil
	}
	var refs []sources.ObjectRef
	if src.gk == sources.Kustomization {
		refs, err = sources.KustomizationInventory(obj)
	} else {
		refs, err = sources.ApplicationResources(obj)
	}
	var partial *sources.InventoryError
	if err != nil {
		// Entries that cannot be read make the source Unknown; the readable ones are still checked.
		self.Status, self.Message = healthv1alpha1.StatusUnknown, err.Error()
		p.results = append(p.results, self)
		if !errors.As(err, &partial) {
			return true, nil
		}
	}
	return true, p.addInventory(refs)
}

// addInventory adds the objects a source lists.
func (p *plan) addInventory(refs []sources.ObjectRef) error {
	for _, ref := range refs {
		gvk := ref.GroupVersionKind()
		if gvk.GroupKind() == secretKind {
			p.results = append(p.results, healthv1alpha1.ResourceHealth{APIVersion: gvk.GroupVersion().String(), Kind: ref.Kind,
				Namespace: ref.Namespace, Name: ref.Name, Status: healthv1alpha1.StatusCurrent,
				Message: "Secrets are not read; kstatus calls every existing Secret Current"})
			continue
		}
		k, served, err := p.resolve(gvk, ref.Namespace)
		if err != nil {
			return err
		}
		if !served {
			p.results = append(p.results, notServed(gvk, ref.Namespace, ref.Name))
			continue
		}
		p.objects = append(p.objects, namedObject{kind: k, namespace: k.scope.Namespace, name: ref.Name})
		p.interest(k.scope).addName(k.scope.Namespace, ref.Name)
	}
	return nil
}
