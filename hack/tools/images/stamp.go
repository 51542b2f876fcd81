package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Stamp is what the images say about their source: the version, the commit and when it was made.
type Stamp struct {
	Version  string
	Revision string
	// Created is the commit time, not the build time, so a rebuild of the same commit gives the
	// same image digests.
	Created time.Time
}

// GitStamp reads the stamp from the git checkout at root. The version is the nearest v* tag
// without its "v" ("1.4.0", or "1.4.0-3-gabc1234" after it), or "0.0.0-dev.g<commit>" where no
// tag exists; "-dirty" marks uncommitted changes. SOURCE_DATE_EPOCH overrides the time.
func GitStamp(root string) (Stamp, error) {
	var s Stamp
	var err error
	if s.Revision, err = git(root, "rev-parse", "HEAD"); err != nil {
		return s, err
	}
	if s.Version, err = git(root, "describe", "--tags", "--match", "v[0-9]*", "--dirty"); err == nil {
		s.Version = strings.TrimPrefix(s.Version, "v")
	} else {
		s.Version = "0.0.0-dev.g" + s.Revision[:12]
		if dirty, _ := git(root, "status", "--porcelain", "--untracked-files=no"); dirty != "" {
			s.Version += "-dirty"
		}
	}
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		if epoch, err = git(root, "log", "-1", "--format=%ct"); err != nil {
			return s, err
		}
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return s, fmt.Errorf("commit time %q is not a Unix time: %w", epoch, err)
	}
	s.Created = time.Unix(secs, 0).UTC()
	return s, nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// validTag reports whether tag is a valid image tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
func validTag(tag string) bool {
	if tag == "" || len(tag) > 128 || tag[0] == '.' || tag[0] == '-' {
		return false
	}
	for _, c := range tag {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
