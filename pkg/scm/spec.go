package scm

import (
	"fmt"
	"strconv"
	"strings"

	scmv1 "github.com/sluicehq/sluice/api/scm/v1alpha1"
	"github.com/sluicehq/sluice/pkg/scm/ratelimit"
)

// ConfigFor builds the Config of an ScmProvider object. secret is the data of the Secret named by
// spec.secretRef (nil for type git); caBundle is the PEM read from spec.caBundle, if any. Errors
// name the missing or malformed key, never its value.
func ConfigFor(p *scmv1.ScmProvider, secret map[string][]byte, caBundle []byte) (Config, error) {
	cfg := Config{
		Key:                       p.Namespace + "/" + p.Name,
		BaseURL:                   p.Spec.BaseURL,
		AllowInsecureLoopbackHTTP: p.Spec.AllowInsecureLoopbackHTTP,
		CABundle:                  caBundle,
	}
	limits, err := LimitsFor(p.Spec.RateLimit)
	if err != nil {
		return Config{}, err
	}
	cfg.RateLimit = limits

	if p.Spec.Type == scmv1.ScmProviderGit {
		return cfg, nil
	}
	secretName := "(none)"
	if p.Spec.SecretRef != nil {
		secretName = p.Spec.SecretRef.Name
	}
	cfg.Credentials.WebhookSecret = secret[scmv1.SecretKeyWebhookSecret]
	if app := p.Spec.GitHubApp; app != nil {
		key := secret[scmv1.SecretKeyGitHubAppPrivateKey]
		if len(key) == 0 {
			return Config{}, fmt.Errorf("secret %q has no key %s: put the GitHub App's private key (.pem) there",
				secretName, scmv1.SecretKeyGitHubAppPrivateKey)
		}
		cfg.Credentials.GitHubApp = &GitHubAppCredentials{AppID: app.AppID, InstallationID: app.InstallationID, PrivateKeyPEM: key}
		return cfg, nil
	}
	token := secret[scmv1.SecretKeyToken]
	if len(token) == 0 {
		return Config{}, fmt.Errorf("secret %q has no key %s: put an API access token for the %s server there",
			secretName, scmv1.SecretKeyToken, p.Spec.Type)
	}
	cfg.Credentials.Token = string(token)
	return cfg, nil
}

// LimitsFor converts spec.rateLimit. Nil means the provider's defaults.
func LimitsFor(r *scmv1.RateLimit) (ratelimit.Limits, error) {
	if r == nil {
		return ratelimit.Limits{}, nil
	}
	qps, err := strconv.ParseFloat(r.QPS, 64)
	if err != nil || qps <= 0 {
		return ratelimit.Limits{}, fmt.Errorf("rateLimit.qps %q is not a positive decimal number such as \"1.5\"", r.QPS)
	}
	l := ratelimit.Limits{QPS: qps, Burst: int(r.Burst)}
	return l, l.Validate()
}

// RepositoryFor returns where a ScmRepository lives on its SCM.
func RepositoryFor(r *scmv1.ScmRepository) Repository {
	return Repository{Owner: r.Spec.Owner, Name: r.Spec.Name}
}

// DeliveredFor reports whether a webhook delivered through provider (an ScmProvider's name) about
// repo is about the ScmRepository r. SCMs compare owners and names without regard to case.
func DeliveredFor(r *scmv1.ScmRepository, provider string, repo Repository) bool {
	want := RepositoryFor(r)
	return r.Spec.ProviderRef.Name == provider && strings.EqualFold(want.Owner, repo.Owner) && strings.EqualFold(want.Name, repo.Name)
}
