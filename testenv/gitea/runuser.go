package gitea

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// nobodyID is the conventional uid and gid of "nobody", used when the passwd database lacks it.
const nobodyID = 65534

// runUser is the account Gitea runs as. Gitea refuses to run as root, so a root caller drops to
// nobody; anyone else runs Gitea as themselves (credential nil).
type runUser struct {
	name       string
	uid, gid   int
	credential *syscall.Credential
}

func chooseRunUser() (runUser, error) {
	if os.Geteuid() != 0 {
		name := os.Getenv("USER")
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
		if name == "" {
			return runUser{}, fmt.Errorf("cannot tell the current user's name for Gitea's RUN_USER: user lookup failed and USER is empty")
		}
		return runUser{name: name, uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	uid, gid := nobodyID, nobodyID
	if u, err := user.Lookup("nobody"); err == nil {
		if id, err := strconv.Atoi(u.Uid); err == nil {
			uid = id
		}
		if id, err := strconv.Atoi(u.Gid); err == nil {
			gid = id
		}
	}
	return runUser{
		name: "nobody",
		uid:  uid,
		gid:  gid,
		// An empty group list drops root's supplementary groups.
		credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}},
	}, nil
}

// dropsPrivileges reports whether Gitea runs as another user than the caller.
func (u runUser) dropsPrivileges() bool { return u.credential != nil }

// own hands every file under dir to the user, except the skipped trees: those hold hard links
// into the shared cache, and chowning a link would hand the cached files to the user too.
func (u runUser) own(dir string, skip ...string) error {
	return filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if slices.Contains(skip, path) {
			if entry.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		return os.Lchown(path, u.uid, u.gid)
	})
}

// checkReachable fails when some folder above dir cannot be entered by other users, which would
// stop the unprivileged Gitea from reaching its own work folder.
func checkReachable(dir string) error {
	for parent := filepath.Dir(dir); ; parent = filepath.Dir(parent) {
		info, err := os.Stat(parent)
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("gitea runs as user nobody, who cannot enter %s (mode %v): set TMPDIR to a folder everyone can enter, such as /tmp", parent, info.Mode().Perm())
		}
		if parent == filepath.Dir(parent) {
			return nil
		}
	}
}
