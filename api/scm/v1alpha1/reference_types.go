package v1alpha1

// LocalObjectReference names an object in the same namespace as the referrer.
type LocalObjectReference struct {
	// Name of the object, in the referrer's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Keys Sluice reads from the Secret named by ScmProvider.spec.secretRef.
const (
	// SecretKeyToken holds a personal, project or bot access token for the SCM API.
	SecretKeyToken = "token"
	// SecretKeyGitHubAppPrivateKey holds the PEM private key of a GitHub App.
	SecretKeyGitHubAppPrivateKey = "githubAppPrivateKey"
	// SecretKeyWebhookSecret holds the shared secret that signs (or, on GitLab, accompanies) webhooks.
	SecretKeyWebhookSecret = "webhookSecret"
)

// Keys Sluice reads from the Secret named by ScmRepository.spec.auth.secretRef.
const (
	// GitSecretKeyToken holds an access token used as the HTTPS password.
	GitSecretKeyToken = "token"
	// GitSecretKeyUsername holds the HTTPS user name. Optional with token auth.
	GitSecretKeyUsername = "username"
	// GitSecretKeyPassword holds the HTTPS password for basic auth.
	GitSecretKeyPassword = "password"
	// GitSecretKeyIdentity holds the SSH private key.
	GitSecretKeyIdentity = "identity"
	// GitSecretKeyKnownHosts holds the known_hosts lines that pin the SSH server's host key.
	GitSecretKeyKnownHosts = "known_hosts"
	// GitSecretKeyPassphrase holds the passphrase of an encrypted SSH private key. Optional.
	GitSecretKeyPassphrase = "passphrase"
)

// DefaultCABundleKey is the key read from a CA bundle Secret or ConfigMap when none is given.
const DefaultCABundleKey = "ca.crt"
