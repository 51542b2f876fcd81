package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	rollbackv1alpha1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/ui/internal/gitdiff"
)

// releaseDiff shows the per-object diff between two snapshots of a ManifestRelease, read from
// their Secrets as the person who asks, through the rollback-controller's own reader: only the
// Secrets the release owns, holding the digests its status chain records.
func (s *Server) releaseDiff(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	mr := s.Store.ManifestRelease(ns, name)
	if mr == nil {
		s.notFound(w, r, "ManifestRelease", ns, name)
		return
	}
	q := r.URL.Query()
	data := diffData{Heading: "Snapshots of ManifestRelease " + ns + "/" + name, From: "snapshot " + q.Get("from"),
		To: "snapshot " + q.Get("to"), Back: "/rollbacks?q=" + ns + "/" + name}
	status := http.StatusOK
	var err error
	if data.Result, err = s.readReleaseDiff(r, mr, q.Get("from"), q.Get("to")); err != nil {
		status, data.Error = diffError(err)
	}
	s.render(w, r, status, "diff", page{Title: "Diff of " + ns + "/" + name, Nav: "rollbacks", Data: data})
}

func (s *Server) readReleaseDiff(r *http.Request, mr *rollbackv1alpha1.ManifestRelease, fromArg, toArg string) (res gitdiff.Result, err error) {
	from, errFrom := strconv.ParseInt(fromArg, 10, 64)
	to, errTo := strconv.ParseInt(toArg, 10, 64)
	if errFrom != nil || errTo != nil || from < 1 || to < 1 {
		return res, &readRefusal{http.StatusBadRequest, fmt.Sprintf("from and to must be snapshot numbers, not %q and %q", fromArg, toArg)}
	}
	kube, err := s.personKube(r)
	if err != nil {
		return res, err
	}
	lim := DiffLimits.WithDefaults()
	ctx, cancel := context.WithTimeout(r.Context(), lim.Timeout)
	defer cancel()
	release, err := takeDiffSlot(ctx)
	if err != nil {
		return res, err
	}
	defer release()
	store := &snapshot.Store{Client: kube.CoreV1(), Owner: mr.UID, Digests: snapshot.ChainDigests(mr.Status)}
	load := func(n int64) ([]snapshot.File, error) {
		files, _, err := store.Load(ctx, mr.Namespace, mr.Name, n)
		if apierrors.IsForbidden(err) {
			return nil, &readRefusal{http.StatusForbidden, fmt.Sprintf("You may not read the Secrets of snapshot %d of ManifestRelease %s/%s, so the UI does not read them for you. Ask for get on Secrets in %s. The API server said: %v",
				n, mr.Namespace, mr.Name, mr.Namespace, err)}
		}
		if errors.Is(err, snapshot.ErrNotFound) {
			return nil, &readRefusal{http.StatusNotFound, fmt.Sprintf("ManifestRelease %s/%s keeps no snapshot %d", mr.Namespace, mr.Name, n)}
		}
		return files, timedOut(ctx, err, lim)
	}
	old, err := load(from)
	if err != nil {
		return res, err
	}
	cur, err := load(to)
	if err != nil {
		return res, err
	}
	res, err = gitdiff.Objects(ctx, old, cur, lim)
	return res, timedOut(ctx, err, lim)
}
