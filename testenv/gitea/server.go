// Package gitea runs a real Gitea server on loopback for integration tests: a throwaway SQLite
// instance with an admin user and an API token, built once from hack/tools/gitea.
package gitea

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	adminUser  = "sluice"
	adminEmail = "sluice@example.com"
	// readyTimeout bounds the wait for the web server; a healthy start takes seconds.
	readyTimeout = 2 * time.Minute
	// stopTimeout is how long Gitea may shut down gracefully before it is killed.
	stopTimeout = 10 * time.Second
	tailLines   = 40
)

// Options configure Start.
type Options struct {
	// BinDir holds a gitea binary and its static/ assets, as filled by hack/tools/gitea/build.sh.
	// Empty means the shared cache folder, built on first use.
	BinDir string
}

// Server is a running Gitea. Its admin owns the repositories CreateRepo makes; Token is an API
// token of that admin, also accepted as the password for git over HTTP.
type Server struct {
	// URL is the base address, such as http://127.0.0.1:34567, without a trailing slash.
	URL           string
	AdminUser     string
	AdminPassword string
	Token         string

	dir     string
	binary  string
	appIni  string
	logPath string
	user    runUser
	http    *http.Client

	web       *exec.Cmd
	exited    chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// StartForTest starts a server for the test and stops it when the test ends. On failure it logs
// the tail of Gitea's output first. The first call on a machine builds Gitea, which takes minutes.
func StartForTest(t testing.TB) *Server {
	t.Helper()
	s, err := Start(t.Context(), Options{})
	if err != nil {
		t.Fatalf("starting gitea: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gitea output (last %d lines):\n%s", tailLines, s.logTail())
		}
		if err := s.Close(); err != nil {
			t.Errorf("stopping gitea: %v", err)
		}
	})
	return s
}

// Start builds Gitea if needed, then starts a fresh server in a temporary folder, creates the admin
// user and an API token. Close stops it and removes the folder.
func Start(ctx context.Context, opts Options) (*Server, error) {
	binDir, err := ensureBinDir(ctx, opts.BinDir)
	if err != nil {
		return nil, err
	}
	user, err := chooseRunUser()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-gitea-")
	if err != nil {
		return nil, fmt.Errorf("creating gitea's work folder: %w", err)
	}
	s := &Server{
		AdminUser:     adminUser,
		AdminPassword: randomHex(16),
		dir:           dir,
		appIni:        filepath.Join(dir, "custom", "conf", "app.ini"),
		logPath:       filepath.Join(dir, "gitea.log"),
		user:          user,
		http:          &http.Client{Timeout: time.Minute},
	}
	if err := s.start(ctx, binDir); err != nil {
		if tail := s.logTail(); tail != "" {
			err = fmt.Errorf("%w\ngitea output (last %d lines):\n%s", err, tailLines, tail)
		}
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, binDir string) error {
	if err := s.prepare(binDir); err != nil {
		return err
	}
	if err := s.run(ctx, "migrate"); err != nil {
		return err
	}
	if err := s.run(ctx, "admin", "user", "create", "--admin",
		"--username", s.AdminUser, "--password", s.AdminPassword, "--email", adminEmail,
		"--must-change-password=false"); err != nil {
		return err
	}
	if err := s.startWeb(); err != nil {
		return err
	}
	if err := s.waitReady(ctx); err != nil {
		return err
	}
	token, err := s.createToken(ctx, "sluice-test")
	if err != nil {
		return err
	}
	s.Token = token
	return nil
}

// prepare lays out the work folder: app.ini, data folders and, when Gitea runs as nobody, its own
// links to the binary and assets, since the cache usually sits in root's private home.
func (s *Server) prepare(binDir string) error {
	s.binary = filepath.Join(binDir, "gitea")
	static := filepath.Join(binDir, "static")
	if s.user.dropsPrivileges() {
		if err := checkReachable(s.dir); err != nil {
			return err
		}
		if err := os.Chmod(s.dir, 0o755); err != nil {
			return err
		}
		s.binary = filepath.Join(s.dir, "bin", "gitea")
		if err := os.MkdirAll(filepath.Dir(s.binary), 0o755); err != nil {
			return err
		}
		if err := linkOrCopy(filepath.Join(binDir, "gitea"), s.binary); err != nil {
			return fmt.Errorf("giving user %s access to the gitea binary: %w", s.user.name, err)
		}
		static = filepath.Join(s.dir, "static")
		if err := linkTree(filepath.Join(binDir, "static"), static); err != nil {
			return fmt.Errorf("giving user %s access to gitea's assets: %w", s.user.name, err)
		}
	}
	for _, sub := range []string{"custom/conf", "data", "log", "repositories", "home", "tmp"} {
		if err := os.MkdirAll(filepath.Join(s.dir, sub), 0o755); err != nil {
			return err
		}
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := writeAppIni(s.appIni, localAppIni(s.dir, static, s.user.name, port)); err != nil {
		return fmt.Errorf("writing %s: %w", s.appIni, err)
	}
	if s.user.dropsPrivileges() {
		if err := s.user.own(s.dir, filepath.Dir(s.binary), static); err != nil {
			return fmt.Errorf("handing %s to user %s: %w", s.dir, s.user.name, err)
		}
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port for gitea: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// command prepares a gitea invocation with a clean environment: inherited GIT_* or GITEA_*
// variables would point Gitea and its git calls somewhere else.
func (s *Server) command(args ...string) (*exec.Cmd, *os.File, error) {
	logFile, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	global := []string{"--work-path", s.dir, "--config", s.appIni}
	cmd := exec.Command(s.binary, append(global, args...)...)
	cmd.Dir = s.dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(s.dir, "home"),
		"USER=" + s.user.name,
		"TMPDIR=" + filepath.Join(s.dir, "tmp"),
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: s.user.credential,
		// Its own process group, so Close can kill git children too; killed with the test process.
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
	}
	return cmd, logFile, nil
}

// run runs a one-shot gitea command to completion.
func (s *Server) run(ctx context.Context, args ...string) error {
	cmd, logFile, err := s.command(args...)
	if err != nil {
		return err
	}
	defer logFile.Close()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("running gitea %s: %w", args[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("gitea %s: %w", strings.Join(args[:min(len(args), 3)], " "), err)
		}
		return nil
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("gitea %s: %w", args[0], ctx.Err())
	}
}

func (s *Server) startWeb() error {
	cmd, logFile, err := s.command("web")
	if err != nil {
		return err
	}
	defer logFile.Close()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting gitea web: %w", err)
	}
	s.web = cmd
	s.exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	return nil
}

// waitReady polls the version endpoint until Gitea answers, exits, or time runs out.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := s.API(ctx, http.MethodGet, "/version", nil, nil); err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("gitea web exited during startup: %v", s.web.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("gitea did not answer on %s/api/v1/version: %w", s.URL, ctx.Err())
		case <-tick.C:
		}
	}
}

// Close stops Gitea (SIGTERM, then SIGKILL after a grace period) and removes its folder.
// It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.stop(), os.RemoveAll(s.dir))
	})
	return s.closeErr
}

func (s *Server) stop() error {
	if s.web == nil {
		return nil
	}
	pgid := s.web.Process.Pid
	// Sweeps leftover git children even after a clean exit; ESRCH just means none are left.
	defer func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }()
	if err := s.web.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling gitea: %w", err)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.exited
		return nil
	}
}

// logTail returns the last lines Gitea wrote, for error messages.
func (s *Server) logTail() string {
	data, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	return tail(string(data), tailLines)
}

func tail(text string, lines int) string {
	all := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// RepoDir is the bare repository owner/name on disk, for a test that installs a server-side
// hook in it (hooks/pre-receive.d/ runs on every push, Gitea's own merges included). Gitea runs
// the hook as the user it runs as, which may be nobody.
func (s *Server) RepoDir(owner, name string) string {
	return filepath.Join(s.dir, "repositories", strings.ToLower(owner), strings.ToLower(name)+".git")
}
