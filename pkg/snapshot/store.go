package snapshot

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

var (
	// ErrNotFound is a snapshot number with no head Secret.
	ErrNotFound = errors.New("snapshot not found")
	// ErrNumberTaken is a Save of a number that already holds other manifests.
	ErrNumberTaken = errors.New("snapshot number already holds other manifests")
)

// Store reads and writes snapshots as Secrets through the API server. Snapshots are read rarely
// (on a rollback), so it calls the API directly instead of caching every Secret of the cluster.
type Store struct {
	Client  corev1client.SecretsGetter
	Options Options
	// FieldManager names the writer in managedFields.
	FieldManager string
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

// List returns the complete-looking snapshots of release (those with a head), by number.
func (s *Store) List(ctx context.Context, namespace, release string) ([]Info, error) {
	selector := labels.Set{LabelRelease: release, LabelChunk: "0"}.AsSelector()
	list, err := s.Client.Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	var infos []Info
	for i := range list.Items {
		if list.Items[i].Type != SecretType {
			continue
		}
		if info, err := InfoOf(&list.Items[i]); err == nil {
			infos = append(infos, info)
		}
	}
	slices.SortFunc(infos, func(a, b Info) int { return cmp.Compare(a.Number, b.Number) })
	return infos, nil
}

// Prune deletes every Secret of release whose number is not in keep, heads before chunks so that
// a prune cut short never leaves a head without its chunks. It returns the numbers whose head
// it deleted.
func (s *Store) Prune(ctx context.Context, namespace, release string, keep []int64) ([]int64, error) {
	selector, err := pruneSelector(release, keep)
	if err != nil {
		return nil, err
	}
	client := s.Client.Secrets(namespace)
	list, err := client.List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	items := list.Items
	slices.SortStableFunc(items, func(a, b corev1.Secret) int {
		return strings.Compare(a.Labels[LabelChunk], b.Labels[LabelChunk])
	})
	var pruned []int64
	for i := range items {
		item := &items[i]
		if item.Type != SecretType {
			continue
		}
		uid := item.UID
		err := client.Delete(ctx, item.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return pruned, fmt.Errorf("prune snapshot Secret %s/%s: %w", namespace, item.Name, err)
		}
		if item.Labels[LabelChunk] == "0" {
			n, _ := strconv.ParseInt(item.Labels[LabelNumber], 10, 64)
			pruned = append(pruned, n)
		}
	}
	slices.Sort(pruned)
	return pruned, nil
}

func pruneSelector(release string, keep []int64) (labels.Selector, error) {
	releaseReq, err := labels.NewRequirement(LabelRelease, selection.Equals, []string{release})
	if err != nil {
		return nil, err
	}
	selector := labels.NewSelector().Add(*releaseReq)
	if len(keep) == 0 {
		return selector, nil
	}
	values := make([]string, len(keep))
	for i, n := range keep {
		values[i] = strconv.FormatInt(n, 10)
	}
	keepReq, err := labels.NewRequirement(LabelNumber, selection.NotIn, values)
	if err != nil {
		return nil, err
	}
	return selector.Add(*keepReq), nil
}
