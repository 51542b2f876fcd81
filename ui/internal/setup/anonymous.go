package setup

import (
	"flag"
	"fmt"
	"log/slog"
)

// AnonymousRead is the --anonymous value that lets requests naming nobody read every page.
const AnonymousRead = "read"

func (c *Config) addAnonymousFlag(fs *flag.FlagSet) {
	fs.StringVar(&c.Anonymous, "anonymous", "", "What a request that names nobody may do: nothing (empty, the default: a 401 page) or read (every page, showing what the anonymous identity, system:anonymous in system:unauthenticated, may read, by SubjectAccessReviews; a warning is logged). Local mode always names you.")
}

func (c *Config) validateAnonymous() error {
	switch {
	case c.Anonymous != "" && c.Anonymous != AnonymousRead:
		return fmt.Errorf("--anonymous must be empty or read, got %q", c.Anonymous)
	case c.Anonymous != "" && c.Identity == IdentityKubeconfig:
		return fmt.Errorf("--anonymous is for --identity=none or proxy: local mode always names you")
	}
	return nil
}

// anonymousRead reports whether anonymous reading is on, warning when it is.
func anonymousRead(cfg Config, log *slog.Logger) bool {
	if cfg.Anonymous != AnonymousRead {
		return false
	}
	log.Warn("--anonymous=read: anyone who reaches the UI reads every page, with what system:anonymous may read")
	return true
}
