package git

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage"
)

// Repository is one caller's handle on a cached repository: the shared bare repository plus this
// caller's credentials and hydrator settings. It is safe for concurrent use.
type Repository struct {
	sh           *shared
	endpoint     *transport.Endpoint
	auth         transport.AuthMethod
	secrets      []string
	notesRef     plumbing.ReferenceName
	metadataFile string
}

// URL is the remote URL, safe to print.
func (r *Repository) URL() string { return redactURL(r.sh.url) }

// NotesRef is the notes ref read for dry SHAs.
func (r *Repository) NotesRef() string { return r.notesRef.String() }

// trackingRef is where the cache keeps its copy of a remote ref. Branches follow git's own
// layout, so `git log origin/dev` works in the cache folder; other refs (notes) go beside them.
func trackingRef(remote plumbing.ReferenceName) plumbing.ReferenceName {
	if remote.IsBranch() {
		return plumbing.ReferenceName("refs/remotes/" + remoteName + "/" + remote.Short())
	}
	return plumbing.ReferenceName("refs/remotes/" + remoteName + "-refs/" + strings.TrimPrefix(remote.String(), "refs/"))
}

func branchRef(branch string) (plumbing.ReferenceName, error) {
	name := plumbing.NewBranchReferenceName(strings.TrimPrefix(branch, "refs/heads/"))
	if branch == "" || name.Validate() != nil {
		return "", fmt.Errorf("%q is not a valid branch name", branch)
	}
	return name, nil
}

// Fetch brings the given branches, and the notes ref, from the remote into the cache, moving the
// cache's copies to whatever the remote has now, even when a branch was rewritten. Only these
// refs, and only the objects the cache lacks, are transferred; when nothing moved, nothing but
// the ref advertisement is. Branches the remote does not have are dropped from the cache and
// reported together in a *BranchNotFoundError, after the others were fetched.
func (r *Repository) Fetch(ctx context.Context, branches ...string) error {
	refs := map[plumbing.ReferenceName]bool{r.notesRef: true}
	for _, b := range branches {
		name, err := branchRef(b)
		if err != nil {
			return err
		}
		refs[name] = true
	}

	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	err := r.fetchLocked(ctx, refs)
	var missing *BranchNotFoundError
	if (err == nil || errors.As(err, &missing)) && ctx.Err() == nil {
		markFetched(r.sh)
		// The fetch is complete and its refs are updated: the time to consolidate what this and
		// earlier fetches (and merges) added, while the lock is held anyway.
		r.sh.cache.maintainLocked(r.sh)
	}
	return err
}

// fetchLocked fetches refs (remote names); the notes ref may be missing, branches may not.
func (r *Repository) fetchLocked(ctx context.Context, refs map[plumbing.ReferenceName]bool) error {
	sto := r.sh.sto
	sess, err := r.uploadSession()
	if err != nil {
		return r.remoteErr(ctx, "fetch from", err)
	}
	defer sess.Close()

	ar, advertised, err := advertisedRefs(ctx, sess)
	if err != nil {
		return r.remoteErr(ctx, "fetch from", err)
	}

	var missing []string
	var wants []plumbing.Hash
	updates := map[plumbing.ReferenceName]plumbing.Hash{}
	for name := range refs {
		h, ok := advertised[name]
		if !ok {
			if name != r.notesRef {
				missing = append(missing, name.Short())
			}
			if err := removeRef(sto, trackingRef(name)); err != nil {
				return err
			}
			continue
		}
		updates[trackingRef(name)] = h
		if !hasObject(sto, h) && !containsHash(wants, h) {
			wants = append(wants, h)
		}
	}

	if len(wants) > 0 {
		if err := r.downloadPack(ctx, sess, ar, wants); err != nil {
			return err
		}
	}
	// A large pack reopens the storage.
	sto = r.sh.sto
	for name, h := range updates {
		if err := sto.SetReference(plumbing.NewHashReference(name, h)); err != nil {
			return fmt.Errorf("update %s in the git cache: %w", name, err)
		}
	}
	if len(missing) > 0 {
		return &BranchNotFoundError{Branches: sortedStrings(missing)}
	}
	return nil
}

// downloadPack asks the remote for wants and stores the pack it sends.
func (r *Repository) downloadPack(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, wants []plumbing.Hash) error {
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	if ar.Capabilities.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	req.Wants = wants
	haves, err := localHaves(r.sh.sto)
	if err != nil {
		return err
	}
	req.Haves = haves
	resp, err := sess.UploadPack(ctx, req)
	if errors.Is(err, transport.ErrEmptyUploadPackRequest) {
		return nil
	}
	if err != nil {
		return r.remoteErr(ctx, "fetch from", err)
	}
	defer resp.Close()
	var pack io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		pack = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		pack = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	if err := r.storePack(pack); err != nil {
		// go-git keeps the partial pack of a failed download. The error to report is the
		// download's; a removal that failed is tried again when the next process opens the cache.
		_ = removeLeftovers(r.sh.dir)
		return r.remoteErr(ctx, "store the pack fetched from", err)
	}
	return nil
}

// storePack stores a fetched pack: go-git indexes a small one in memory, indexPack a large one
// from disk (see defaultLargePackObjects).
func (r *Repository) storePack(pack io.Reader) error {
	header := make([]byte, packHeaderSize)
	n, err := io.ReadFull(pack, header)
	if err != nil || !bytes.HasPrefix(header, []byte("PACK")) || binary.BigEndian.Uint32(header[8:]) <= r.sh.cache.largePackObjects {
		// go-git words whatever is wrong with a short or malformed header.
		return packfile.UpdateObjectStorage(r.sh.sto, io.MultiReader(bytes.NewReader(header[:n]), pack))
	}
	if err := storeLargePack(filepath.Join(r.sh.dir, "objects", "pack"), header, pack); err != nil {
		return err
	}
	r.sh.reopenStorage()
	return nil
}

// havesPerRef bounds how far back each cached ref offers commits the remote may share. The tips
// almost always suffice (branches grow); the ancestors cover a tip the remote rewrote away.
const havesPerRef = 16

// localHaves lists commits the cache already has, so the remote sends only what is new.
func localHaves(sto storage.Storer) ([]plumbing.Hash, error) {
	refs, err := sto.IterReferences()
	if err != nil {
		return nil, err
	}
	seen := map[plumbing.Hash]bool{}
	var haves []plumbing.Hash
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() != plumbing.HashReference || !ref.Name().IsRemote() {
			return nil
		}
		h := ref.Hash()
		for i := 0; i < havesPerRef && !seen[h]; i++ {
			seen[h] = true
			haves = append(haves, h)
			c, err := object.GetCommit(sto, h)
			if err != nil || len(c.ParentHashes) == 0 {
				return nil
			}
			h = c.ParentHashes[0]
		}
		return nil
	})
	return haves, err
}

func (r *Repository) uploadSession() (transport.UploadPackSession, error) {
	tr, err := client.NewClient(r.endpoint)
	if err != nil {
		return nil, err
	}
	return tr.NewUploadPackSession(r.endpoint, r.auth)
}

func (r *Repository) receivePackSession() (transport.ReceivePackSession, error) {
	tr, err := client.NewClient(r.endpoint)
	if err != nil {
		return nil, err
	}
	return tr.NewReceivePackSession(r.endpoint, r.auth)
}

type advertiser interface {
	AdvertisedReferencesContext(context.Context) (*packp.AdvRefs, error)
}

// advertisedRefs returns the advertisement and the remote's refs by name; an empty repository
// has none. Ask once per session: go-git's HTTP client sends a request for every call.
func advertisedRefs(ctx context.Context, sess advertiser) (*packp.AdvRefs, map[plumbing.ReferenceName]plumbing.Hash, error) {
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, map[plumbing.ReferenceName]plumbing.Hash{}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	refs := make(map[plumbing.ReferenceName]plumbing.Hash, len(ar.References))
	for name, h := range ar.References {
		refs[plumbing.ReferenceName(name)] = h
	}
	return ar, refs, nil
}

// remoteErr words a failed network operation without credentials, keeping its kind.
func (r *Repository) remoteErr(ctx context.Context, op string, err error) error {
	var kind error
	var hostKey *HostKeyError
	text := redactText(err.Error(), r.secrets)
	switch {
	case errors.As(err, &hostKey):
		kind = hostKey
		text = hostKey.Error()
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed),
		strings.Contains(err.Error(), "unable to authenticate"):
		kind = ErrAuthentication
		text = "the remote refused the credentials (or needs some): check the Secret"
	case errors.Is(err, transport.ErrRepositoryNotFound):
		kind = ErrRepositoryNotFound
		text = "no repository at this URL, or the credentials may not see it"
	case strings.Contains(err.Error(), "no common algorithm for host key"):
		kind = ErrHostKeyMismatch
		text = "the server offers none of the host key types known_hosts pins for it"
	}
	return &remoteError{
		msg:  fmt.Sprintf("%s %s: %s", op, redactURL(r.sh.url), text),
		kind: kind,
		ctx:  ctx.Err(),
	}
}
