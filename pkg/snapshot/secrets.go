package snapshot

import (
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The Secret format; see the package documentation.
const (
	SecretType               corev1.SecretType = "rollback.sluice.dev/raw-manifests"
	DataKey                                    = "manifests.tar.zst"
	LabelRelease                               = "rollback.sluice.dev/release"
	LabelNumber                                = "rollback.sluice.dev/upgrade-number"
	LabelChunk                                 = "rollback.sluice.dev/chunk"
	AnnotationDigest                           = "rollback.sluice.dev/digest"
	AnnotationChunks                           = "rollback.sluice.dev/chunks"
	AnnotationSize                             = "rollback.sluice.dev/size"
	AnnotationCompressedSize                   = "rollback.sluice.dev/compressed-size"
)

// Meta says whose snapshot an archive is.
type Meta struct {
	Namespace string
	// Release is the name of the manifest set; at most 63 characters (a label value).
	Release string
	// Number is the upgrade number, from 1.
	Number int64
	// Annotations are copied onto the head Secret, such as the version a person reads.
	Annotations map[string]string
	// Owner, when set, makes the Secrets go away with the release.
	Owner *metav1.OwnerReference
}

// HeadName is the name of the Secret that holds snapshot number of release.
func HeadName(release string, number int64) string {
	return release + "." + strconv.FormatInt(number, 10)
}

// ChunkName is the name of the Secret that holds chunk i ≥ 1 of a snapshot; chunk 0 is the head.
func ChunkName(release string, number int64, i int) string {
	if i == 0 {
		return HeadName(release, number)
	}
	return HeadName(release, number) + "-" + strconv.Itoa(i)
}

// TooLargeError is a snapshot that needs more Secrets than allowed. Nothing was written.
type TooLargeError struct {
	Release    string
	Compressed int
	Size       int64
	ChunkBytes int
	Needed     int
	MaxChunks  int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the snapshot of %q is %d bytes compressed (%d uncompressed) and needs %d Secrets of at most %d bytes, over the limit of %d: "+
		"split the manifests into smaller releases, or raise the controller's --snapshot-max-chunks",
		e.Release, e.Compressed, e.Size, e.Needed, e.ChunkBytes, e.MaxChunks)
}

// ValidateMeta checks that every Secret name and label of a snapshot can exist.
func ValidateMeta(m Meta) error {
	if m.Number < 1 {
		return fmt.Errorf("upgrade number %d: numbers start at 1", m.Number)
	}
	if errs := validation.IsValidLabelValue(m.Release); len(errs) > 0 || m.Release == "" {
		return fmt.Errorf("release name %q cannot label its snapshots (at most 63 characters, alphanumeric, '-', '_' or '.'): rename it", m.Release)
	}
	// The longest name is the last chunk's; DefaultMaxChunks keeps it to one digit, check two.
	if errs := validation.IsDNS1123Subdomain(ChunkName(m.Release, m.Number, 99)); len(errs) > 0 {
		return fmt.Errorf("snapshot Secret names of release %q are invalid: %v", m.Release, errs)
	}
	return nil
}

// Secrets cuts an archive into the Secrets that hold it, the head first. Write them in reverse
// order (Store.Save does): the head last.
func Secrets(m Meta, a Archive, opts Options) ([]*corev1.Secret, error) {
	opts = opts.withDefaults()
	if err := ValidateMeta(m); err != nil {
		return nil, err
	}
	needed := max(1, (len(a.Compressed)+opts.ChunkBytes-1)/opts.ChunkBytes)
	if needed > opts.MaxChunks {
		return nil, &TooLargeError{Release: m.Release, Compressed: len(a.Compressed), Size: a.Size,
			ChunkBytes: opts.ChunkBytes, Needed: needed, MaxChunks: opts.MaxChunks}
	}
	secrets := make([]*corev1.Secret, needed)
	for i := range secrets {
		piece := a.Compressed[min(i*opts.ChunkBytes, len(a.Compressed)):min((i+1)*opts.ChunkBytes, len(a.Compressed))]
		secrets[i] = chunkSecret(m, a, i, piece)
	}
	head := secrets[0]
	for k, v := range m.Annotations {
		head.Annotations[k] = v
	}
	head.Annotations[AnnotationDigest] = a.Digest
	head.Annotations[AnnotationChunks] = strconv.Itoa(needed)
	head.Annotations[AnnotationSize] = strconv.FormatInt(a.Size, 10)
	head.Annotations[AnnotationCompressedSize] = strconv.Itoa(len(a.Compressed))
	return secrets, nil
}

func chunkSecret(m Meta, a Archive, i int, piece []byte) *corev1.Secret {
	immutable := true
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ChunkName(m.Release, m.Number, i),
			Namespace: m.Namespace,
			Labels: map[string]string{
				LabelRelease:                   m.Release,
				LabelNumber:                    strconv.FormatInt(m.Number, 10),
				LabelChunk:                     strconv.Itoa(i),
				"app.kubernetes.io/managed-by": "rollback-controller",
			},
			Annotations: map[string]string{AnnotationDigest: a.Digest},
		},
		Type:      SecretType,
		Immutable: &immutable,
		Data:      map[string][]byte{DataKey: piece},
	}
	if m.Owner != nil {
		s.OwnerReferences = []metav1.OwnerReference{*m.Owner}
	}
	return s
}

// ErrIncomplete is a snapshot whose Secrets do not fit together: a chunk missing, from another
// snapshot, or of another digest.
var ErrIncomplete = errors.New("snapshot Secrets are incomplete")

// Info describes a stored snapshot, read from its head Secret.
type Info struct {
	Number int64
	Digest string
	// Size is the uncompressed tar's, CompressedSize what the Secrets hold.
	Size           int64
	CompressedSize int64
	Chunks         int
	Annotations    map[string]string
}

// InfoOf reads the description of a snapshot from its head Secret.
func InfoOf(head *corev1.Secret) (Info, error) {
	number, err := strconv.ParseInt(head.Labels[LabelNumber], 10, 64)
	if err != nil || head.Labels[LabelChunk] != "0" || head.Type != SecretType {
		return Info{}, fmt.Errorf("%w: Secret %s/%s is not the head of a snapshot", ErrIncomplete, head.Namespace, head.Name)
	}
	chunks, err := strconv.Atoi(head.Annotations[AnnotationChunks])
	if err != nil || chunks < 1 {
		return Info{}, fmt.Errorf("%w: Secret %s/%s has no valid %s annotation", ErrIncomplete, head.Namespace, head.Name, AnnotationChunks)
	}
	size, err := strconv.ParseInt(head.Annotations[AnnotationSize], 10, 64)
	if err != nil {
		return Info{}, fmt.Errorf("%w: Secret %s/%s has no valid %s annotation", ErrIncomplete, head.Namespace, head.Name, AnnotationSize)
	}
	compressed, _ := strconv.ParseInt(head.Annotations[AnnotationCompressedSize], 10, 64)
	return Info{Number: number, Digest: head.Annotations[AnnotationDigest], Size: size, CompressedSize: compressed,
		Chunks: chunks, Annotations: head.Annotations}, nil
}

// Join puts an archive back together from its Secrets, head first, and checks that each one
// belongs to the same snapshot. It does not decompress; Unpack verifies the digest.
func Join(secrets []*corev1.Secret) (Archive, Info, error) {
	if len(secrets) == 0 {
		return Archive{}, Info{}, fmt.Errorf("%w: no Secrets", ErrIncomplete)
	}
	info, err := InfoOf(secrets[0])
	if err != nil {
		return Archive{}, Info{}, err
	}
	if len(secrets) != info.Chunks {
		return Archive{}, Info{}, fmt.Errorf("%w: snapshot %s has %d of its %d Secrets", ErrIncomplete, secrets[0].Name, len(secrets), info.Chunks)
	}
	release := secrets[0].Labels[LabelRelease]
	var compressed []byte
	for i, s := range secrets {
		if s.Labels[LabelRelease] != release || s.Labels[LabelNumber] != strconv.FormatInt(info.Number, 10) ||
			s.Labels[LabelChunk] != strconv.Itoa(i) || s.Annotations[AnnotationDigest] != info.Digest {
			return Archive{}, Info{}, fmt.Errorf("%w: Secret %s is not chunk %d of snapshot %s (digest %s)", ErrIncomplete, s.Name, i, secrets[0].Name, info.Digest)
		}
		compressed = append(compressed, s.Data[DataKey]...)
	}
	return Archive{Compressed: compressed, Digest: info.Digest, Size: info.Size}, info, nil
}
