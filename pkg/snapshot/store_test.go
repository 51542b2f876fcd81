package snapshot

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func newStore(opts Options) (*Store, *fake.Clientset) {
	client := fake.NewClientset()
	return &Store{Client: client.CoreV1(), Options: opts, FieldManager: "rollback-controller"}, client
}

func splitOptions(t *testing.T, files []File, chunks int) Options {
	a, err := Pack(files, Options{})
	require.NoError(t, err)
	return Options{ChunkBytes: len(a.Compressed)/chunks + 1}
}

func TestStoreSavesAndLoadsASplitSnapshotByteForByte(t *testing.T) {
	ctx := context.Background()
	files := generated(500)
	store, client := newStore(splitOptions(t, files, 3))

	info, err := store.Save(ctx, meta(4), files)
	require.NoError(t, err)
	require.Equal(t, 3, info.Chunks)
	list, err := client.CoreV1().Secrets("platform").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 3)

	got, loaded, err := store.Load(ctx, "platform", "flux", 4)
	require.NoError(t, err)
	require.Equal(t, info.Digest, loaded.Digest)
	require.Len(t, got, len(files))
	for _, f := range files {
		require.Equal(t, f.Data, find(t, got, f.Name).Data)
	}
}

func TestStoreSaveIsIdempotentAndRefusesATakenNumber(t *testing.T) {
	ctx := context.Background()
	store, _ := newStore(Options{})
	first, err := store.Save(ctx, meta(1), sampleFiles())
	require.NoError(t, err)
	again, err := store.Save(ctx, meta(1), sampleFiles())
	require.NoError(t, err)
	require.Equal(t, first.Digest, again.Digest)

	_, err = store.Save(ctx, meta(1), generated(3))
	require.ErrorIs(t, err, ErrNumberTaken)
}

// A Save killed after writing some chunks leaves them without a head; the next Save of that
// number, with other manifests, replaces them.
func TestStoreSaveReplacesChunksLeftByAnUnfinishedSave(t *testing.T) {
	ctx := context.Background()
	files := generated(500)
	opts := splitOptions(t, files, 3)
	store, client := newStore(opts)

	stale, err := Pack(generated(480), Options{})
	require.NoError(t, err)
	staleSecrets, err := Secrets(meta(2), stale, opts)
	require.NoError(t, err)
	for _, s := range staleSecrets[1:] {
		_, err := client.CoreV1().Secrets("platform").Create(ctx, s, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	_, err = store.Save(ctx, meta(2), files)
	require.NoError(t, err)
	got, _, err := store.Load(ctx, "platform", "flux", 2)
	require.NoError(t, err)
	require.Len(t, got, 500)
}

func TestStoreLoadRefusesMissingOrForeignSnapshots(t *testing.T) {
	ctx := context.Background()
	files := generated(500)
	store, client := newStore(splitOptions(t, files, 2))
	_, _, err := store.Load(ctx, "platform", "flux", 9)
	require.ErrorIs(t, err, ErrNotFound)

	_, err = store.Save(ctx, meta(1), files)
	require.NoError(t, err)
	require.NoError(t, client.CoreV1().Secrets("platform").Delete(ctx, ChunkName("flux", 1, 1), metav1.DeleteOptions{}))
	_, _, err = store.Load(ctx, "platform", "flux", 1)
	require.ErrorIs(t, err, ErrIncomplete)

	_, err = client.CoreV1().Secrets("platform").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "flux.5", Namespace: "platform"},
		Data:       map[string][]byte{"token": []byte("hunter2")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, _, err = store.Load(ctx, "platform", "flux", 5)
	require.ErrorIs(t, err, ErrIncomplete)
	require.NotContains(t, err.Error(), "hunter2")
}

func TestStoreDeleteRemovesHeadsChunksAndLeftovers(t *testing.T) {
	ctx := context.Background()
	files := generated(500)
	opts := splitOptions(t, files, 2)
	opts.ChunkBytes += 512
	store, client := newStore(opts)
	for n := int64(1); n <= 2; n++ {
		version := File{Name: "version.txt", Data: []byte{byte('0' + n)}}
		info, err := store.Save(ctx, meta(n), append([]File{version}, files...))
		require.NoError(t, err)
		require.Equal(t, 2, info.Chunks)
	}
	other := meta(1)
	other.Release = "other"
	_, err := store.Save(ctx, other, sampleFiles())
	require.NoError(t, err)
	// Chunks of number 3 without their head, as a killed Save leaves them.
	orphan, err := Pack(generated(499), Options{})
	require.NoError(t, err)
	orphanSecrets, err := Secrets(meta(3), orphan, store.Options)
	require.NoError(t, err)
	_, err = client.CoreV1().Secrets("platform").Create(ctx, orphanSecrets[1], metav1.CreateOptions{})
	require.NoError(t, err)

	info, err := store.Head(ctx, "platform", "flux", 2)
	require.NoError(t, err)
	require.Equal(t, int64(2), info.Number)

	require.NoError(t, store.Delete(ctx, "platform", "flux", 1))
	require.NoError(t, store.Delete(ctx, "platform", "flux", 3))
	require.NoError(t, store.Delete(ctx, "platform", "flux", 9), "nothing to delete is fine")
	_, err = store.Head(ctx, "platform", "flux", 1)
	require.ErrorIs(t, err, ErrNotFound)

	list, err := client.CoreV1().Secrets("platform").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var left []string
	for _, s := range list.Items {
		left = append(left, s.Name)
	}
	require.ElementsMatch(t, []string{"flux.2", "flux.2-1", "other.1"}, left)
}

func TestStoreDeleteLeavesForeignSecretsAlone(t *testing.T) {
	ctx := context.Background()
	store, client := newStore(Options{})
	_, err := client.CoreV1().Secrets("platform").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "flux.1", Namespace: "platform"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.ErrorIs(t, store.Delete(ctx, "platform", "flux", 1), ErrIncomplete)
	_, err = client.CoreV1().Secrets("platform").Get(ctx, "flux.1", metav1.GetOptions{})
	require.NoError(t, err)
}

// A store bound to an owner never loads, reuses or deletes a snapshot Secret another owner wrote,
// however well it is labelled: a planted snapshot cannot be rolled back to, and a release
// re-created under the same name does not take over the old one's snapshots.
func TestStoreBoundToAnOwnerIgnoresSecretsItDidNotWrite(t *testing.T) {
	ctx := context.Background()
	files := generated(3)
	planter, client := newStore(Options{})
	m := meta(2)
	m.Owner = &metav1.OwnerReference{APIVersion: "rollback.sluice.dev/v1alpha1", Kind: "ManifestRelease", Name: "flux", UID: "old-uid"}
	_, err := planter.Save(ctx, m, files)
	require.NoError(t, err)

	store := &Store{Client: client.CoreV1(), FieldManager: "rollback-controller", Owner: "new-uid"}
	_, _, err = store.Load(ctx, "platform", "flux", 2)
	require.ErrorIs(t, err, ErrNotOwned)
	_, err = store.Head(ctx, "platform", "flux", 2)
	require.ErrorIs(t, err, ErrNotOwned)
	m.Owner.UID = "new-uid"
	_, err = store.Save(ctx, m, files)
	require.ErrorIs(t, err, ErrNotOwned, "the same digest under a name another owner holds is not adopted")
	require.Error(t, store.Delete(ctx, "platform", "flux", 2))
	_, err = client.CoreV1().Secrets("platform").Get(ctx, HeadName("flux", 2), metav1.GetOptions{})
	require.NoError(t, err, "a Secret it did not write is never deleted")

	owner := &Store{Client: client.CoreV1(), Owner: "old-uid"}
	got, _, err := owner.Load(ctx, "platform", "flux", 2)
	require.NoError(t, err)
	require.Len(t, got, len(files))
}

// A store bound to a digest chain never loads or deletes a head whose digest is not the one the
// chain recorded for its number, even one with the owner's UID, which whoever may create
// Secrets can write: a planted snapshot with the right labels is refused, and the real one,
// whose digest the chain holds, loads.
func TestStoreBoundToADigestChainIgnoresAPlantedSnapshot(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	m := meta(2)
	m.Owner = &metav1.OwnerReference{APIVersion: "rollback.sluice.dev/v1alpha1", Kind: "ManifestRelease", Name: "flux", UID: "uid"}
	writer := &Store{Client: client.CoreV1(), Owner: "uid"}
	real, err := writer.Save(ctx, m, generated(3))
	require.NoError(t, err)
	m.Number = 3
	planted, err := writer.Save(ctx, m, generated(4))
	require.NoError(t, err)

	store := &Store{Client: client.CoreV1(), Owner: "uid", Digests: map[int64]string{2: real.Digest, 3: real.Digest}}
	_, _, err = store.Load(ctx, "platform", "flux", 3)
	require.ErrorIs(t, err, ErrNotOwned)
	require.ErrorContains(t, err, "holds digest "+planted.Digest)
	_, err = store.Head(ctx, "platform", "flux", 3)
	require.ErrorIs(t, err, ErrNotOwned)
	require.ErrorIs(t, store.Delete(ctx, "platform", "flux", 3), ErrNotOwned)
	_, err = client.CoreV1().Secrets("platform").Get(ctx, HeadName("flux", 3), metav1.GetOptions{})
	require.NoError(t, err, "a Secret outside the chain is never deleted")
	delete(store.Digests, 3)
	_, _, err = store.Load(ctx, "platform", "flux", 3)
	require.ErrorIs(t, err, ErrNotOwned, "a number the chain does not hold is not loaded")

	got, _, err := store.Load(ctx, "platform", "flux", 2)
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.NoError(t, store.Delete(ctx, "platform", "flux", 2))
}
