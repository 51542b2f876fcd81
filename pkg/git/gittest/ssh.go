package gittest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHServer serves the repositories of a Server over SSH, as git-upload-pack and git-receive-pack
// commands, to clients holding the one authorised key.
type SSHServer struct {
	// Addr is host:port of the listener.
	Addr string
	// HostKey is the server's public host key.
	HostKey ssh.PublicKey
	// KnownHosts is a known_hosts line that pins HostKey for Addr.
	KnownHosts []byte
	// ClientKey is the PEM private key the server accepts.
	ClientKey []byte

	srv *Server
}

// StartSSH listens on a loopback port with a fresh host key and a fresh authorised client key.
// It stops with the test.
func (s *Server) StartSSH(tb testing.TB) *SSHServer {
	tb.Helper()
	hostSigner := newSigner(tb)
	clientPEM, clientSigner := NewPrivateKey(tb)
	authorized := clientSigner.PublicKey().Marshal()

	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if string(key.Marshal()) == string(authorized) {
				return &ssh.Permissions{}, nil
			}
			return nil, errors.New("key not authorised")
		},
	}
	cfg.AddHostKey(hostSigner)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ss := &SSHServer{
		Addr:      ln.Addr().String(),
		HostKey:   hostSigner.PublicKey(),
		ClientKey: clientPEM,
		srv:       s,
	}
	ss.KnownHosts = []byte(knownhosts.Line([]string{ss.Addr}, ss.HostKey) + "\n")

	var wg sync.WaitGroup
	tb.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ss.serveConn(conn, cfg)
			}()
		}
	}()
	return ss
}

// URL is the ssh:// clone URL of the repository name.
func (ss *SSHServer) URL(name string) string {
	return "ssh://git@" + ss.Addr + "/" + name + ".git"
}

// NewPrivateKey returns a fresh ed25519 key, PEM encoded (OpenSSH format) and as a signer.
func NewPrivateKey(tb testing.TB) ([]byte, ssh.Signer) {
	tb.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "gittest")
	if err != nil {
		tb.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(block), signer
}

// KnownHostsWithOtherKey returns a known_hosts line for addr with a key the server does not have,
// as if the server's key had changed or someone were in the middle.
func KnownHostsWithOtherKey(tb testing.TB, addr string) []byte {
	tb.Helper()
	return []byte(knownhosts.Line([]string{addr}, newSigner(tb).PublicKey()) + "\n")
}

func newSigner(tb testing.TB) ssh.Signer {
	_, s := NewPrivateKey(tb)
	return s
}

func (ss *SSHServer) serveConn(conn net.Conn, cfg *ssh.ServerConfig) {
	defer conn.Close()
	sconn, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return
	}
	defer sconn.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go ss.serveSession(ch, chReqs)
	}
}

func (ss *SSHServer) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			// go-git may ask to set environment variables; accepting them changes nothing.
			_ = req.Reply(req.Type == "env", nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			return
		}
		_ = req.Reply(true, nil)
		status := ss.run(payload.Command, ch, ch.Stderr())
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		return
	}
}

// run executes one git command such as git-upload-pack '/name.git' and returns its exit status.
func (ss *SSHServer) run(command string, rw io.ReadWriter, stderr io.Writer) uint32 {
	service, arg, _ := strings.Cut(command, " ")
	name := strings.TrimSuffix(strings.TrimPrefix(strings.Trim(arg, "'"), "/"), ".git")
	dir, err := ss.srv.repoDir(name)
	if err != nil {
		fmt.Fprintf(stderr, "fatal: '%s' does not appear to be a git repository\n", arg)
		return 128
	}
	ctx := context.Background()
	switch service {
	case transport.UploadPackServiceName:
		if err = ss.srv.advertise(name, dir, service, rw, false); err == nil {
			err = ss.srv.uploadPack(ctx, name, dir, rw, rw)
		}
	case transport.ReceivePackServiceName:
		if err = ss.srv.advertise(name, dir, service, rw, false); err == nil {
			// Hide the channel's Close: go-git's server closes the pack reader once it has read
			// the pack, which would end the session before the report is sent.
			err = ss.srv.receivePack(ctx, name, dir, struct{ io.Reader }{rw}, rw)
		}
	default:
		fmt.Fprintf(stderr, "fatal: unknown command %q\n", service)
		return 127
	}
	if err != nil {
		fmt.Fprintf(stderr, "fatal: %v\n", err)
		return 1
	}
	return 0
}
