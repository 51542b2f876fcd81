package git

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

const (
	// DefaultNotesRef is where Argo CD's source hydrator (and gitops-promoter's hydrator contract)
	// keep the hydrator note of each hydrated commit.
	DefaultNotesRef = "refs/notes/hydrator.metadata"
	// DefaultMetadataFile is the file at the root of a hydrated commit that names its dry commit.
	DefaultMetadataFile = "hydrator.metadata"
)

// remoteName is the one remote of every cached repository.
const remoteName = "origin"

// Cache keeps one bare repository per remote URL under a root folder, shared by every caller
// that uses that URL. It survives restarts: an existing repository is reopened, and one that
// cannot be read is removed and fetched again from scratch.
type Cache struct {
	root        string
	log         *slog.Logger
	maintenance Maintenance
	// maintenanceStep, when set, is called at each step of a repack; tests use it to fail or
	// kill one.
	maintenanceStep func(step string) error

	// largePackObjects is the object count above which a fetched pack is indexed from disk.
	largePackObjects uint32

	// evictAfter is how long a repository may go unfetched before evictStale removes it.
	evictAfter time.Duration

	// objects holds decoded objects for every repository of the cache, under one budget.
	objects cache.Object

	mu    sync.Mutex
	repos map[string]*shared
	// evicted is when evictStale last ran.
	evicted time.Time
}

// shared is the state of one cached repository. Its lock is held for every operation, network
// included, so that two callers never interleave ref updates in the same repository.
type shared struct {
	mu    sync.Mutex
	url   string
	dir   string
	sto   *filesystem.Storage
	cache *Cache

	// looseKept is how many loose objects the last repack left in place (unreachable ones, kept
	// for Maintenance.KeepUnreachable): they do not count towards the next repack.
	looseKept int
	// maintenanceAfter delays the next repack after one failed, so that a repository that cannot
	// be repacked is not walked again on every fetch.
	maintenanceAfter time.Time
}

// NewCache returns a cache rooted at root, creating the folder if needed. log receives the
// cache's own events (recovery from a damaged repository, repacks); nil means slog.Default().
func NewCache(root string, log *slog.Logger, opts ...CacheOption) (*Cache, error) {
	if root == "" {
		return nil, errors.New("the git cache needs a root folder")
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("create git cache folder: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	c := &Cache{root: root, log: log, repos: map[string]*shared{}, evictAfter: DefaultEvictAfter, largePackObjects: defaultLargePackObjects,
		objects: cache.NewObjectLRU(objectCacheSize)}
	for _, opt := range opts {
		opt(c)
	}
	c.maintenance = c.maintenance.withDefaults()
	c.evictStale()
	return c, nil
}

// CacheOption tunes a Cache.
type CacheOption func(*Cache)

// Options tunes how a repository's hydrator metadata is read.
type Options struct {
	// NotesRef is the notes ref holding hydrator notes. Default DefaultNotesRef.
	NotesRef string
	// MetadataFile is the path, from the root of a hydrated commit, of the hydrator metadata
	// file. Default DefaultMetadataFile.
	MetadataFile string
}

// Open returns a handle on the cached repository for url, used with auth. Handles for the same
// URL share the repository on disk and its lock, whatever their credentials. Open reads the disk
// only; nothing is fetched until Fetch. It also checks and parses the credentials, so keep a
// handle for as long as they do not change.
func (c *Cache) Open(url string, auth Auth, opts Options) (*Repository, error) {
	url = strings.TrimSpace(url)
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, fmt.Errorf("%q is not a git URL: %s", redactURL(url), redactText(err.Error(), nil))
	}
	if ep.Password != "" {
		return nil, fmt.Errorf("the URL %s carries credentials: remove them and pass them as Auth", redactURL(url))
	}
	method, err := auth.transportAuth(ep, c.root)
	if err != nil {
		return nil, fmt.Errorf("credentials for %s: %w", redactURL(url), err)
	}
	ep.CaBundle = auth.CABundle

	if opts.NotesRef == "" {
		opts.NotesRef = DefaultNotesRef
	}
	notesRef := plumbing.ReferenceName(opts.NotesRef)
	if !strings.HasPrefix(opts.NotesRef, "refs/notes/") || notesRef.Validate() != nil {
		return nil, fmt.Errorf("notes ref %q must be a valid ref under refs/notes/", opts.NotesRef)
	}
	if opts.MetadataFile == "" {
		opts.MetadataFile = DefaultMetadataFile
	}
	metadataFile := strings.Trim(opts.MetadataFile, "/")
	if metadataFile == "" || strings.Contains("/"+metadataFile+"/", "/../") {
		return nil, fmt.Errorf("metadata file %q must be a path inside the repository", opts.MetadataFile)
	}

	c.evictStale()
	sh := c.shared(url)
	sh.mu.Lock()
	err = c.ensureOpen(sh)
	sh.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &Repository{
		sh:           sh,
		endpoint:     ep,
		auth:         method,
		secrets:      auth.secrets(),
		notesRef:     notesRef,
		metadataFile: metadataFile,
	}, nil
}

func (c *Cache) shared(url string) *shared {
	key := cacheKey(url)
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, ok := c.repos[key]
	if !ok {
		sh = &shared{url: url, dir: filepath.Join(c.root, key), cache: c}
		c.repos[key] = sh
	}
	return sh
}

// cacheKey names a repository's folder after a hash of its URL: stable across restarts, safe as
// a path, and free of anything the URL holds.
func cacheKey(url string) string {
	sum := sha256.Sum256([]byte(url))
	return hex.EncodeToString(sum[:16])
}

// ensureOpen opens the repository on first use, or makes a new one. A folder that does not read
// as this URL's bare repository is set aside by removing it: the cache holds nothing that cannot
// be fetched again.
func (c *Cache) ensureOpen(sh *shared) error {
	if sh.sto != nil {
		return nil
	}
	sto, err := openBare(sh.dir, sh.url, c.objects)
	if err == nil {
		// What a process killed mid-write left: see removeLeftovers.
		if err := removeLeftovers(sh.dir); err != nil {
			c.log.Warn("cannot remove what an interrupted write left in the git cache",
				"url", redactURL(sh.url), "dir", sh.dir, "reason", err.Error())
		}
		sh.sto = sto
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		c.log.Warn("git cache folder is damaged; removing it and fetching the repository again",
			"url", redactURL(sh.url), "dir", sh.dir, "reason", redactText(err.Error(), nil))
		if rmErr := os.RemoveAll(sh.dir); rmErr != nil {
			return fmt.Errorf("remove damaged git cache folder %s: %w", sh.dir, rmErr)
		}
	}
	if sto, err = initBare(sh.dir, sh.url, c.objects); err != nil {
		return fmt.Errorf("create git cache for %s in %s: %w", redactURL(sh.url), sh.dir, err)
	}
	sh.sto = sto
	return nil
}

// reopenStorage opens the repository's storage again after its pack folder changed behind
// go-git's back (a repack, a large fetched pack): with ExclusiveAccess the storage keeps its list
// of packs and their indexes in memory.
func (sh *shared) reopenStorage() {
	old := sh.sto
	sh.sto = newStorage(sh.dir, sh.cache.objects)
	_ = old.Close()
}

// objectCacheSize bounds the decoded objects the cache keeps, for all its repositories together.
// The walks here revisit commits, which are small. A single large repository keeps the 16 MiB it
// had when each repository had its own budget; a fleet of 1,000 small ones reads about 3 KiB
// each. One budget rather than one per repository, because go-git's cache sets aside a
// 1,000-entry table even when empty: 54 KiB per repository, 60% of the promoter's live heap at
// 300 strategies.
//
// Sharing is safe across repositories, tenants' included: go-git looks an object up in the
// cache only once the repository's own index or loose objects hold it, and an object is named by
// the hash of its content (SHA-1 with collision detection, sha1cd).
const objectCacheSize = 16 * cache.MiByte

func newStorage(dir string, objects cache.Object) *filesystem.Storage {
	// The process holds each repository's lock for every write, so go-git may keep its list of
	// packfiles instead of reading the folder on every object lookup.
	return filesystem.NewStorageWithOptions(osfs.New(dir), objects, filesystem.Options{ExclusiveAccess: true})
}

func initBare(dir, url string, objects cache.Object) (*filesystem.Storage, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	sto := newStorage(dir, objects)
	repo, err := gogit.Init(sto, nil)
	if err != nil {
		return nil, err
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{url}}); err != nil {
		return nil, err
	}
	return sto, nil
}

// openBare opens an existing cached repository and checks that it is whole enough to use: its
// config names this URL, and every remote-tracking ref leads to a readable commit.
func openBare(dir, url string, objects cache.Object) (*filesystem.Storage, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "config")); err != nil {
		// Not wrapped: a missing config file must not read as a missing folder.
		return nil, errors.New("not a bare repository: it has no config file")
	}
	sto := newStorage(dir, objects)
	cfg, err := sto.Config()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	remote, ok := cfg.Remotes[remoteName]
	if !ok || len(remote.URLs) != 1 || remote.URLs[0] != url {
		return nil, errors.New("the folder belongs to another remote URL")
	}
	refs, err := sto.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("read refs: %w", err)
	}
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() != plumbing.HashReference || !ref.Name().IsRemote() {
			return nil
		}
		if _, err := object.GetCommit(sto, ref.Hash()); err != nil {
			return fmt.Errorf("ref %s leads to an unreadable commit %s: %w", ref.Name(), ref.Hash(), err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sto, nil
}
