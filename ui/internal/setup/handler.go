package setup

import (
	"context"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluicehq/sluice/pkg/access"
	"github.com/sluicehq/sluice/pkg/runtime/manager"
	"github.com/sluicehq/sluice/ui/internal/auth"
	"github.com/sluicehq/sluice/ui/internal/store"
	"github.com/sluicehq/sluice/ui/internal/web"
)

// NewHandler builds the store and the web server on m, without serving it: tests serve it on a
// listener of their own.
func NewHandler(m *manager.Manager, cfg Config) (http.Handler, error) {
	st, err := store.New(m.Sluice, m.Metadata, m.Options.Namespace)
	if err != nil {
		return nil, err
	}
	if err := st.WatchAgents(m.Dynamic, m.Metadata, m.Options.Namespace); err != nil {
		return nil, err
	}
	m.WaitFor(st.Agents.Kinds.HasSynced)
	m.AddServer(st.Agents.Kinds.Run)
	st.Log(m.Log)
	m.WaitFor(st.Kinds.HasSynced)
	m.AddServer(st.Kinds.Run)
	activity, err := st.WatchEvents(m.Kube, m.Options.Namespace)
	if err != nil {
		return nil, err
	}
	m.AddServer(activity.Run)

	var identify web.Identifier = web.Anonymous{}
	var actor *web.Actor
	switch cfg.Identity {
	case IdentityKubeconfig:
		identify = localIdentity(cfg, whoAmI(m), m.Log)
		actor = web.NewActor(m.RESTConfig, m.Recorder, false)
	case IdentityProxy:
		proxy := web.Proxy{UserHeader: cfg.UserHeader, GroupsHeader: cfg.GroupsHeader, Trusted: cfg.TrustedProxies,
			AdminGroups: cfg.AdminGroups, AllowedGroups: cfg.AllowedAdminGroups}
		if cfg.OIDC.IssuerURL != "" {
			if proxy.Verifier, err = newTokenVerifier(cfg.OIDC); err != nil {
				return nil, err
			}
		}
		identify = proxy
		actor = web.NewActor(m.RESTConfig, m.Recorder, true)
	}
	var login *auth.Login
	if cfg.Identity == IdentityOIDC {
		if login, err = newLogin(m, cfg.OIDC); err != nil {
			return nil, err
		}
		identify = login
		actor = web.NewActor(m.RESTConfig, m.Recorder, true)
	}
	srv, err := web.New(st, identify, actor, m.Log)
	if err != nil {
		return nil, err
	}
	srv.Metrics = web.NewMetrics(m.Metrics)
	srv.AnonymousRead = anonymousRead(cfg, m.Log)
	if cfg.Identity != IdentityKubeconfig {
		// People read what they may read themselves, not what the UI's ServiceAccount may.
		srv.Reads = &access.Reviewer{Reviews: m.Kube.AuthorizationV1().SubjectAccessReviews(), Clock: m.Clock}
	}
	if login != nil {
		return login.Wrap(srv.Handler()), nil
	}
	return srv.Handler(), nil
}

// whoAmI asks the API server who the kubeconfig's user is, so Events name them as RBAC does.
func whoAmI(m *manager.Manager) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := m.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username == "" {
		m.Log.Warn("cannot tell who the kubeconfig's user is; Events will say \"kubeconfig user\"", "error", err)
		return "kubeconfig user"
	}
	return r.Status.UserInfo.Username
}
