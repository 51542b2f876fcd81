// Command oidc-provider is the real OpenID provider of the UI's integration, browser and e2e
// tests: zitadel/oidc's OpenID provider (its example server's storage and login page, an
// in-memory store), with the clients and users a test writes to a JSON file, and a "groups"
// claim in every ID token, as Dex gives one. Dex itself cannot be built from the Go module proxy
// (hack/tools/oidc-provider/build.sh says why).
//
// It listens on --listen (port 0 picks a free one) and prints "issuer URL" on stdout once it
// serves, so a test learns the issuer without racing for a port. With --tls-cert and --tls-key
// it serves HTTPS, and the issuer is https://: the e2e suite's provider, on the node's address,
// which the UI's pod verifies as any issuer that is not on its own loopback.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Config is the file a test writes.
type Config struct {
	Clients []Client `json:"clients"`
	Users   []User   `json:"users"`
}

// Client is a confidential web client: the authorization code flow with PKCE and refresh tokens.
type Client struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
	// RedirectURIs are exact, or doublestar globs such as http://127.0.0.1:*/oauth2/callback.
	RedirectURIs []string `json:"redirectURIs"`
}

// User signs in on the provider's login page.
type User struct {
	Username string   `json:"username"`
	Password string   `json:"password"`
	Email    string   `json:"email"`
	Groups   []string `json:"groups"`
}

func main() {
	configPath := flag.String("config", "", "JSON file of clients and users")
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	certFile := flag.String("tls-cert", "", "PEM certificate to serve HTTPS with (with --tls-key); empty serves HTTP")
	keyFile := flag.String("tls-key", "", "PEM private key of --tls-cert")
	flag.Parse()
	if (*certFile == "") != (*keyFile == "") {
		fmt.Fprintln(os.Stderr, "oidc-provider: --tls-cert and --tls-key go together")
		os.Exit(2)
	}
	if err := run(*configPath, *listen, *certFile, *keyFile); err != nil {
		fmt.Fprintln(os.Stderr, "oidc-provider:", err)
		os.Exit(1)
	}
}

func run(configPath, listen, certFile, keyFile string) error {
	raw, err := os.ReadFile(configPath)
	if err != nil {
		return err
	}
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("%s: %w", configPath, err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	issuer := "http://" + ln.Addr().String()
	if certFile != "" {
		// Loaded before the issuer is printed, so a bad certificate fails the start.
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return err
		}
		issuer = "https://" + ln.Addr().String()
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	users := newUsers(cfg.Users)
	clients := map[string]*storage.Client{}
	globs := map[string][]string{}
	for _, c := range cfg.Clients {
		clients[c.ID] = storage.WebClient(c.ID, c.Secret, c.RedirectURIs...)
		globs[c.ID] = c.RedirectURIs
	}
	st := &store{Storage: storage.NewStorageWithClients(users, clients), users: users, globs: globs}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	router := exampleop.SetupServer(issuer, st, log, false)
	fmt.Printf("issuer %s\n", issuer)
	return (&http.Server{Handler: router, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
}

// store adds the groups claim, and redirect globs, to the example's in-memory storage.
type store struct {
	*storage.Storage
	users userStore
	globs map[string][]string
}

// SetUserinfoFromRequest fills the ID token's claims.
func (s *store) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	s.addGroups(info, req.GetSubject())
	return nil
}

// SetUserinfoFromToken fills the userinfo endpoint's answer, which oauth2-proxy reads.
func (s *store) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, info, tokenID, subject, origin); err != nil {
		return err
	}
	s.addGroups(info, info.Subject)
	return nil
}

func (s *store) addGroups(info *oidc.UserInfo, subject string) {
	if groups, ok := s.users.groups[subject]; ok {
		info.AppendClaims("groups", groups)
	}
}

// GetClientByClientID answers the client with its redirect globs, and its claims in the ID token.
func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return globClient{Client: c, globs: s.globs[id]}, nil
}

type globClient struct {
	op.Client
	globs []string
}

func (c globClient) RedirectURIGlobs() []string           { return c.globs }
func (c globClient) PostLogoutRedirectURIGlobs() []string { return c.globs }

// IDTokenUserinfoClaimsAssertion puts the profile, email and groups claims in the ID token, as
// Dex does, not only in the userinfo answer.
func (c globClient) IDTokenUserinfoClaimsAssertion() bool { return true }

// userStore is the example storage's UserStore over the users of the config file; a user's ID
// (the ID token's subject) is their user name.
type userStore struct {
	byID   map[string]*storage.User
	groups map[string][]string
}

func newUsers(in []User) userStore {
	s := userStore{byID: map[string]*storage.User{}, groups: map[string][]string{}}
	for _, u := range in {
		s.byID[u.Username] = &storage.User{ID: u.Username, Username: u.Username, Password: u.Password,
			FirstName: u.Username, Email: u.Email, EmailVerified: true}
		s.groups[u.Username] = append([]string{}, u.Groups...)
	}
	return s
}

func (s userStore) GetUserByID(id string) *storage.User { return s.byID[id] }

func (s userStore) GetUserByUsername(name string) *storage.User { return s.byID[name] }

// ExampleClientID names the example's JWT-profile service user, which these tests do not use.
func (s userStore) ExampleClientID() string { return storage.ServiceUserID }
