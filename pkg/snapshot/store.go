package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

var (
	// ErrNotFound is a snapshot number with no head Secret.
	ErrNotFound = errors.New("snapshot not found")
	// ErrNumberTaken is a Save of a number that already holds other manifests.
	ErrNumberTaken = errors.New("snapshot number already holds other manifests")
)

// Store reads and writes snapshots as Secrets through the API server. Snapshots are read rarely
// (on a rollback), so it calls the API directly instead of caching every Secret of the cluster,
// and only by name: it needs get, create and delete on Secrets, never list.
type Store struct {
	Client  corev1client.SecretsGetter
	Options Options
	// FieldManager names the writer in managedFields.
	FieldManager string
	// Owner, when set, is the UID of the only owner whose snapshots this store reads, reuses
	// and deletes: a Secret of the right name and labels that is not owned by it (planted, or
	// left by an earlier object of the same name) is never loaded or deleted, and a Save onto
	// it fails with ErrNotOwned.
	Owner types.UID
	// Digests, when not nil, is the digest chain the owner recorded where only it may write
	// (a ManifestRelease's status): the digest each snapshot number it wrote holds. A head Secret
	// of a number not in it, or of another digest, is never loaded or deleted (ErrNotOwned), even
	// with the right labels and owner reference, which anyone who may create Secrets can set.
	// Save is not bound by it: a number is saved before it is recorded.
	Digests map[int64]string
}

// ErrNotOwned is a snapshot Secret that exists under the name but was not written for Store.Owner.
var ErrNotOwned = errors.New("snapshot Secret is not owned by this release")

// owned reports whether secret belongs to s.Owner (always, without one).
func (s *Store) owned(secret *corev1.Secret) bool {
	if s.Owner == "" {
		return true
	}
	for _, o := range secret.OwnerReferences {
		if o.UID == s.Owner {
			return true
		}
	}
	return false
}

// inChain reports whether head holds the digest the chain recorded for its number.
func (s *Store) inChain(head *corev1.Secret, number int64) bool {
	if s.Digests == nil {
		return true
	}
	digest, ok := s.Digests[number]
	return ok && head.Annotations[AnnotationDigest] == digest
}

func (s *Store) notInChain(head *corev1.Secret, number int64) error {
	recorded, ok := s.Digests[number]
	if !ok {
		recorded = "nothing"
	}
	return fmt.Errorf("%w: Secret %s/%s holds digest %s, and the release recorded %s for snapshot %d; it is left alone",
		ErrNotOwned, head.Namespace, head.Name, head.Annotations[AnnotationDigest], recorded, number)
}

func (s *Store) notOwned(secret *corev1.Secret) error {
	return fmt.Errorf("%w: Secret %s/%s (its owners: %s)", ErrNotOwned, secret.Namespace, secret.Name, ownersOf(secret))
}

func ownersOf(secret *corev1.Secret) string {
	var out []string
	for _, o := range secret.OwnerReferences {
		out = append(out, fmt.Sprintf("%s %s uid %s", o.Kind, o.Name, o.UID))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// Save packs files and writes them as snapshot m.Number, the head last. It is idempotent: saving
// the same manifests under the same number again returns the existing snapshot.
func (s *Store) Save(ctx context.Context, m Meta, files []File) (Info, error) {
	a, err := Pack(files, s.Options)
	if err != nil {
		return Info{}, err
	}
	secrets, err := Secrets(m, a, s.Options)
	if err != nil {
		return Info{}, err
	}
	client := s.Client.Secrets(m.Namespace)
	head, err := client.Get(ctx, secrets[0].Name, metav1.GetOptions{})
	switch {
	case err == nil && !s.owned(head):
		return Info{}, s.notOwned(head)
	case err == nil:
		return existingHead(head, a.Digest)
	case !apierrors.IsNotFound(err):
		return Info{}, err
	}
	for i := len(secrets) - 1; i >= 1; i-- {
		if err := s.createReplacing(ctx, client, secrets[i]); err != nil {
			return Info{}, err
		}
	}
	created, err := client.Create(ctx, secrets[0], metav1.CreateOptions{FieldManager: s.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		if created, err = client.Get(ctx, secrets[0].Name, metav1.GetOptions{}); err == nil {
			if !s.owned(created) {
				return Info{}, s.notOwned(created)
			}
			return existingHead(created, a.Digest)
		}
	}
	if err != nil {
		return Info{}, fmt.Errorf("write snapshot Secret %s/%s: %w", m.Namespace, secrets[0].Name, err)
	}
	return InfoOf(created)
}

func existingHead(head *corev1.Secret, wantDigest string) (Info, error) {
	if head.Annotations[AnnotationDigest] != wantDigest {
		return Info{}, fmt.Errorf("%w: Secret %s/%s has digest %s, not %s", ErrNumberTaken, head.Namespace, head.Name,
			head.Annotations[AnnotationDigest], wantDigest)
	}
	return InfoOf(head)
}

// createReplacing creates a chunk. A chunk of that name left by a Save that did not finish is
// reused when it holds the same bytes, and replaced otherwise (chunks are immutable).
func (s *Store) createReplacing(ctx context.Context, client corev1client.SecretInterface, chunk *corev1.Secret) error {
	_, err := client.Create(ctx, chunk, metav1.CreateOptions{FieldManager: s.FieldManager})
	if !apierrors.IsAlreadyExists(err) {
		return wrapWrite(chunk, err)
	}
	old, err := client.Get(ctx, chunk.Name, metav1.GetOptions{})
	if err != nil {
		return wrapWrite(chunk, err)
	}
	if !s.owned(old) {
		return s.notOwned(old)
	}
	if old.Annotations[AnnotationDigest] == chunk.Annotations[AnnotationDigest] &&
		old.Labels[LabelChunk] == chunk.Labels[LabelChunk] && bytes.Equal(old.Data[DataKey], chunk.Data[DataKey]) {
		return nil
	}
	uid := old.UID
	if err := client.Delete(ctx, chunk.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return wrapWrite(chunk, err)
	}
	_, err = client.Create(ctx, chunk, metav1.CreateOptions{FieldManager: s.FieldManager})
	return wrapWrite(chunk, err)
}

func wrapWrite(s *corev1.Secret, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("write snapshot Secret %s/%s: %w", s.Namespace, s.Name, err)
}

// Load reads snapshot number of release whole, checks its digest, and returns its files.
func (s *Store) Load(ctx context.Context, namespace, release string, number int64) ([]File, Info, error) {
	client := s.Client.Secrets(namespace)
	head, err := client.Get(ctx, HeadName(release, number), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, Info{}, fmt.Errorf("%w: %s/%s", ErrNotFound, namespace, HeadName(release, number))
	}
	if err != nil {
		return nil, Info{}, err
	}
	if head.Labels[LabelRelease] != release {
		return nil, Info{}, fmt.Errorf("%w: Secret %s/%s is not a snapshot of %q", ErrIncomplete, namespace, head.Name, release)
	}
	if !s.owned(head) {
		return nil, Info{}, s.notOwned(head)
	}
	if !s.inChain(head, number) {
		return nil, Info{}, s.notInChain(head, number)
	}
	info, err := InfoOf(head)
	if err != nil {
		return nil, Info{}, err
	}
	if info.Chunks > s.Options.withDefaults().MaxChunks {
		return nil, Info{}, fmt.Errorf("%w: Secret %s/%s claims %d chunks, over the limit of %d", ErrIncomplete, namespace, head.Name, info.Chunks, s.Options.withDefaults().MaxChunks)
	}
	secrets := []*corev1.Secret{head}
	for i := 1; i < info.Chunks; i++ {
		chunk, err := client.Get(ctx, ChunkName(release, number, i), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, Info{}, fmt.Errorf("%w: chunk Secret %s/%s is missing", ErrIncomplete, namespace, ChunkName(release, number, i))
		}
		if err != nil {
			return nil, Info{}, err
		}
		if !s.owned(chunk) {
			return nil, Info{}, s.notOwned(chunk)
		}
		secrets = append(secrets, chunk)
	}
	a, info, err := Join(secrets)
	if err != nil {
		return nil, Info{}, err
	}
	files, err := Unpack(a.Compressed, a.Digest, s.Options)
	if err != nil {
		return nil, Info{}, fmt.Errorf("snapshot %s/%s: %w", namespace, head.Name, err)
	}
	return files, info, nil
}

// Head reads the description of snapshot number of release from its head Secret.
func (s *Store) Head(ctx context.Context, namespace, release string, number int64) (Info, error) {
	head, err := s.Client.Secrets(namespace).Get(ctx, HeadName(release, number), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Info{}, fmt.Errorf("%w: %s/%s", ErrNotFound, namespace, HeadName(release, number))
	}
	if err != nil {
		return Info{}, err
	}
	if head.Labels[LabelRelease] != release {
		return Info{}, fmt.Errorf("%w: Secret %s/%s is not a snapshot of %q", ErrIncomplete, namespace, head.Name, release)
	}
	if !s.owned(head) {
		return Info{}, s.notOwned(head)
	}
	if !s.inChain(head, number) {
		return Info{}, s.notInChain(head, number)
	}
	return InfoOf(head)
}

// Delete deletes snapshot number of release: the head first, so that a delete cut short never
// leaves a head without its chunks, then every chunk. A snapshot without a head (a Save cut
// short) has its chunks deleted up to Options.MaxChunks. Secrets already gone are fine.
func (s *Store) Delete(ctx context.Context, namespace, release string, number int64) error {
	client := s.Client.Secrets(namespace)
	chunks := s.Options.withDefaults().MaxChunks
	head, err := client.Get(ctx, HeadName(release, number), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case head.Labels[LabelRelease] != release || head.Type != SecretType || !s.owned(head):
		return fmt.Errorf("%w: Secret %s/%s is not a snapshot of %q; it is left alone", ErrIncomplete, namespace, head.Name, release)
	case !s.inChain(head, number):
		return s.notInChain(head, number)
	default:
		if info, err := InfoOf(head); err == nil {
			chunks = info.Chunks
		}
		if err := s.deleteSecret(ctx, client, head); err != nil {
			return err
		}
	}
	for i := 1; i < chunks; i++ {
		chunk, err := client.Get(ctx, ChunkName(release, number, i), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if chunk.Labels[LabelRelease] != release || chunk.Type != SecretType || !s.owned(chunk) {
			continue
		}
		if err := s.deleteSecret(ctx, client, chunk); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) deleteSecret(ctx context.Context, client corev1client.SecretInterface, secret *corev1.Secret) error {
	uid := secret.UID
	err := client.Delete(ctx, secret.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete snapshot Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}
