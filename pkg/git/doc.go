// Package git is the git layer of the promoter and rollback controllers: a cache of bare
// repositories on disk, fetched and pushed over HTTPS or SSH with go-git, and read and written
// without a working tree.
//
// # Cache
//
// A Cache keeps one bare repository per remote URL, in a folder named after a hash of the URL.
// Every PromotionStrategy on the same repository shares it, each through its own Repository
// handle carrying its own credentials. One lock per repository serialises the operations on it.
// The cache outlives the process: a restart reopens the repositories, and a folder that does not
// read as the URL's repository is removed, logged, and fetched again.
//
// Every fetch that brings something adds a pack, and every commit the cache writes adds loose
// objects; go-git probes every pack index on each object lookup. So after a fetch, a repository
// holding more than Maintenance.MaxPacks packs (32) or MaxLooseObjects loose objects (2,000) is
// repacked, under its lock: what its refs and notes reach goes into one new pack, copied without
// recompressing, which replaces the others. A repository whose history came in a large pack
// (Maintenance.LargePackObjects, 50,000 objects) keeps it, and only the smaller packs and the
// loose objects are rolled into one, so a long history costs its memory once, at the first fetch,
// not at every repack. The new pack is complete and synced before anything is removed, so a
// process killed at any step leaves a readable repository (see repack).
//
// Remote branches are kept as refs/remotes/origin/<branch>, the notes ref as
// refs/remotes/origin-refs/notes/<name>. Fetch overwrites them with whatever the remote has,
// because hydrators rewrite the branches they own. Reads (Resolve, Commit, Log, DrySHA,
// IsAncestor, CompareOnBranch, Merge) see the refs as last fetched.
//
// # Dry SHAs
//
// A hydrated commit names the dry commit it was rendered from in the layout of Argo CD's source
// hydrator: a git note under refs/notes/hydrator.metadata, and a hydrator.metadata file at the
// root of the commit, both JSON with a drySha field. DrySHA reads the note first, then the file,
// and says which it used.
//
// # Merging hydrated branches
//
// MergeAndPush fast-forwards when it can. Otherwise the merge commit takes the tree of the source
// branch unchanged: a proposed branch holds the complete rendered state of its environment, so
// combining it with the target's files could only resurrect what the hydrator deleted, and a
// content merge could conflict on generated files nobody should edit by hand.
//
// # Pushing
//
// Every push is a compare-and-swap on one ref and never a force push: the ref moves only if the
// remote still has the value the caller read, and only to a commit that contains that value. The
// value is checked against the remote's advertisement, like go-git's PushOptions.RequireRemoteRefs,
// and also sent as the update's old value, so a real git server checks it again under its ref
// lock, like git push --force-with-lease. A lost race is a *StaleError (ErrStale), and
// MergeAndPush fetches and retries it.
//
// Pushes are built on go-git's receive-pack session rather than Remote.Push: to choose what to
// send, Remote.Push lists every object reachable from every remote ref, which costs seconds on a
// long history (2 to 3 s and 600 MB of allocations to push one merge commit on 20,000 commits, in
// BenchmarkPromotionCycle). This package walks back only to the commits the remote has. Likewise fetches
// use one upload-pack session: the advertisement decides what is missing, and nothing more is
// requested when nothing moved.
package git
