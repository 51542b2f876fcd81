package node

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// authority is the cluster's one CA: it signs every serving and client certificate, and the
// controller manager signs with it too (--cluster-signing-*).
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// identity is a certificate to issue: a client (CN is the user, O the groups) or a server
// (with its addresses).
type identity struct {
	file   string
	cn     string
	groups []string
	server bool
	ips    []net.IP
	dns    []string
}

func (c Config) identities() []identity {
	nodeIP := net.IP(NodeIP.AsSlice())
	return []identity{
		{file: "apiserver", cn: "kube-apiserver", server: true,
			ips: []net.IP{nodeIP, net.IP(KubernetesServiceIP.AsSlice()), net.IPv4(127, 0, 0, 1)},
			dns: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"}},
		{file: "kubelet-serving", cn: NodeName, server: true, ips: []net.IP{nodeIP}, dns: []string{NodeName}},
		{file: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", groups: []string{"system:masters"}},
		{file: "admin", cn: "sluice-e2e-admin", groups: []string{"system:masters"}},
		{file: "kube-controller-manager", cn: "system:kube-controller-manager"},
		{file: "kube-scheduler", cn: "system:kube-scheduler"},
		{file: "kube-proxy", cn: "system:kube-proxy"},
		{file: "coredns", cn: dnsUser},
		{file: "kubelet", cn: "system:node:" + NodeName, groups: []string{"system:nodes"}},
	}
}

// writePKI writes ca.{crt,key}, <identity>.{crt,key} and the service account key pair sa.{key,pub}.
func (c Config) writePKI() error {
	if err := os.MkdirAll(filepath.Dir(c.pki("ca.crt")), 0o700); err != nil {
		return err
	}
	ca, err := newAuthority()
	if err != nil {
		return err
	}
	if err := writeCert(c.pki("ca"), ca.cert.Raw, ca.key); err != nil {
		return err
	}
	for _, id := range c.identities() {
		der, key, err := ca.issue(id)
		if err != nil {
			return err
		}
		if err := writeCert(c.pki(id.file), der, key); err != nil {
			return err
		}
	}
	sa, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKey(c.pki("sa.key"), sa); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return err
	}
	return os.WriteFile(c.pki("sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sluice-e2e-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(7 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return &authority{cert: cert, key: key}, err
}

func (a *authority) issue(id identity) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: id.cn, Organization: id.groups},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		IPAddresses:  id.ips,
		DNSNames:     id.dns,
	}
	if id.server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	return der, key, err
}

// IssueServing issues a serving certificate for names and ips from the node's CA, in PEM, for
// test servers in pods (the git server): clients trust it through the CA in CAPEM.
func (c Config) IssueServing(cn string, names []string, ips ...net.IP) (certPEM, keyPEM []byte, err error) {
	ca, err := c.loadAuthority()
	if err != nil {
		return nil, nil, err
	}
	der, key, err := ca.issue(identity{cn: cn, server: true, ips: ips, dns: names})
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// CAPEM is the cluster CA's certificate.
func (c Config) CAPEM() ([]byte, error) { return os.ReadFile(c.pki("ca.crt")) }

func (c Config) loadAuthority() (*authority, error) {
	certPEM, err := os.ReadFile(c.pki("ca.crt"))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(c.pki("ca.key"))
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, os.ErrInvalid
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	return &authority{cert: cert, key: key}, err
}

func writeCert(base string, der []byte, key *ecdsa.PrivateKey) error {
	if err := os.WriteFile(base+".crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return writeKey(base+".key", key)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}
