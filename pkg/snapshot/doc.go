// Package snapshot keeps the raw manifests of one applied version of a manifest set (RFC-0002) in
// Kubernetes Secrets, compressed, numbered, verified on read, and never truncated.
//
// # Archive
//
// Pack writes the files as a tar that depends only on their names and bytes: entries sorted by
// name, every time zero (the Unix epoch), mode 0644, owner 0. The same manifests therefore always
// give the same tar and the same digest, "sha256:<hex>" of the tar, whatever the order they were
// read in or the machine that read them. The tar is compressed with zstd (klauspost/compress) at
// Level, chosen from BenchmarkSnapshot in the rollback-controller module: see docs/benchmarks.md.
// The digest is of the uncompressed tar, so it names the content, not the compressor's output.
//
// Unpack reverses it and refuses anything that Pack could not have written: a digest that does
// not match, a tar over Options.MaxSize once decompressed (checked while decompressing, so a
// small hostile Secret cannot fill memory), an entry that is not a regular file, a name that is
// absolute, not clean, or out of order.
//
// # Secrets
//
// Snapshot number N of release R in namespace NS is the Secret "R.N" (the head), plus, when the
// compressed archive is larger than Options.ChunkBytes, the Secrets "R.N-1" … "R.N-(k-1)". Each
// holds one consecutive piece of the archive under the key "manifests.tar.zst". No head name can
// equal a chunk name, whatever the release names: after the last dot a head has only digits and
// a chunk has a dash.
//
// Every Secret has type rollback.sluice.dev/raw-manifests, is immutable, carries the labels
// rollback.sluice.dev/release, rollback.sluice.dev/upgrade-number and rollback.sluice.dev/chunk,
// and the annotations rollback.sluice.dev/digest (all chunks) and, on the head,
// rollback.sluice.dev/chunks, rollback.sluice.dev/size and rollback.sluice.dev/compressed-size. A release name is a label value, so it
// has at most 63 characters.
//
// The API server refuses a Secret whose data is over 1 MiB (keys included), so ChunkBytes is
// 1 MiB minus 1 KiB. An archive that needs more than Options.MaxChunks Secrets is refused with a
// *TooLargeError that gives the sizes and the limit; nothing is written.
//
// # Crash safety
//
// Store.Save writes the chunks first and the head last: a snapshot exists once its head exists,
// and a head always finds its chunks. A Save killed half way leaves chunks without a head. The
// next Save of the same number replaces them (they are immutable, so it deletes and creates), and
// Delete of that number removes them. Save of a number whose head already holds the same digest
// does nothing, so repeating a Save after a crash is safe; a head with another digest is
// ErrNumberTaken.
//
// The Store reads Secrets by name only, never lists them: a controller using it needs get, create
// and delete on Secrets, not the right to list every Secret of the cluster.
package snapshot
