package web

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	"github.com/sluicehq/sluice/pkg/access"
)

// Actor performs actions as the person who asks: with the kubeconfig the UI started with in
// local mode (the caller's own), or by impersonating the person a trusted proxy names. The
// API server's RBAC decides; the UI adds no rights of its own.
type Actor struct {
	Config   *rest.Config
	Recorder record.EventRecorder
	// May answers whether a person may take an action (NewActor, may.go); nil, every action is
	// offered and the API server decides.
	May *access.Reviewer
}

// clients are the clients of one person.
type clients struct {
	Sluice  sluice.Interface
	Dynamic dynamic.Interface
	// User is the person's name, as an approval records it.
	User string
}

func (a *Actor) clientsFor(id Identity) (clients, error) {
	cfg := rest.CopyConfig(a.Config)
	if id.Impersonate {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: id.User, Groups: id.Groups}
	}
	c := clients{User: id.User}
	var err error
	if c.Sluice, err = sluice.NewForConfig(cfg); err != nil {
		return c, err
	}
	c.Dynamic, err = dynamic.NewForConfig(cfg)
	return c, err
}

// statusOf is the HTTP status that carries err to the person: the API server's own (403 for
// RBAC, 409 for a conflict, 422 for invalid input), else 500.
func statusOf(err error) int {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code >= 400 {
		return int(status.Status().Code)
	}
	return http.StatusInternalServerError
}
