package gittest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// storageLoader hands go-git's server one already opened store, whatever the endpoint says.
type storageLoader struct{ sto storer.Storer }

func (l storageLoader) Load(*transport.Endpoint) (storer.Storer, error) { return l.sto, nil }

// open reads the repository afresh for every request, so that writes made by other requests or
// by the test are always seen.
func open(dir string) *filesystem.Storage {
	return filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
}

var anyEndpoint = &transport.Endpoint{Protocol: "file", Path: "/"}

// advertise writes the ref advertisement of service; httpPrefix adds the "# service=" header the
// smart HTTP protocol expects.
func (s *Server) advertise(name, dir, service string, w io.Writer, httpPrefix bool) error {
	defer s.rlock(name)()
	srv := server.NewServer(storageLoader{open(dir)})
	var ar *packp.AdvRefs
	if service == transport.UploadPackServiceName {
		s.adverts.Add(1)
		sess, err := srv.NewUploadPackSession(anyEndpoint, nil)
		if err != nil {
			return err
		}
		if ar, err = sess.AdvertisedReferences(); err != nil {
			return err
		}
	} else {
		sess, err := srv.NewReceivePackSession(anyEndpoint, nil)
		if err != nil {
			return err
		}
		if ar, err = sess.AdvertisedReferences(); err != nil {
			return err
		}
	}
	if httpPrefix {
		ar.Prefix = [][]byte{[]byte("# service=" + service), pktline.Flush}
	}
	return ar.Encode(w)
}

// uploadPack answers one fetch request: wants, then haves, then "done".
func (s *Server) uploadPack(ctx context.Context, name, dir string, r io.Reader, w io.Writer) error {
	req, err := readUploadRequest(r)
	if err != nil || req == nil {
		return err
	}
	s.uploads.Add(1)
	defer s.rlock(name)()
	sess, err := server.NewServer(storageLoader{open(dir)}).NewUploadPackSession(anyEndpoint, nil)
	if err != nil {
		return err
	}
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Close()
	return resp.Encode(w)
}

// readUploadRequest parses the request go-git's server leaves half read: it decodes the wants but
// not the haves, which would make every fetch send the whole history. A nil request means the
// client only wanted the advertisement.
func readUploadRequest(r io.Reader) (*packp.UploadPackRequest, error) {
	sc := pktline.NewScanner(r)
	var wants bytes.Buffer
	enc := pktline.NewEncoder(&wants)
	for sc.Scan() && len(sc.Bytes()) > 0 {
		if err := enc.Encode(sc.Bytes()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if wants.Len() == 0 {
		return nil, nil
	}
	if err := enc.Flush(); err != nil {
		return nil, err
	}
	req := packp.NewUploadPackRequest()
	if err := req.UploadRequest.Decode(&wants); err != nil {
		return nil, fmt.Errorf("decode wants: %w", err)
	}
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\n"))
		if bytes.Equal(line, []byte("done")) {
			break
		}
		if h, ok := bytes.CutPrefix(line, []byte("have ")); ok {
			req.Haves = append(req.Haves, plumbing.NewHash(string(h)))
		}
	}
	return req, sc.Err()
}

// receivePack applies one push. Each command updates its ref only if the ref still has the old
// value the client sent, as git does under its ref lock; go-git's server would overwrite it.
func (s *Server) receivePack(ctx context.Context, name, dir string, r io.Reader, w io.Writer) error {
	req := packp.NewReferenceUpdateRequest()
	if err := req.Decode(r); err != nil {
		return fmt.Errorf("decode push: %w", err)
	}
	s.receives.Add(1)
	s.hook(name)
	unlock := s.lock(name)
	defer unlock()

	sto := open(dir)
	var accepted []*packp.Command
	var rejected []*packp.CommandStatus
	for _, cmd := range req.Commands {
		current, err := currentValue(sto, cmd.Name)
		if err != nil {
			return err
		}
		if current != cmd.Old {
			rejected = append(rejected, &packp.CommandStatus{
				ReferenceName: cmd.Name,
				Status:        fmt.Sprintf("cannot lock ref '%s': is at %s but expected %s", cmd.Name, current, cmd.Old),
			})
			continue
		}
		accepted = append(accepted, cmd)
	}

	rs := &packp.ReportStatus{UnpackStatus: "ok"}
	var pushErr error
	if len(accepted) > 0 {
		req.Commands = accepted
		sess, err := server.NewServer(storageLoader{sto}).NewReceivePackSession(anyEndpoint, nil)
		if err != nil {
			return err
		}
		if rs, pushErr = sess.ReceivePack(ctx, req); rs == nil {
			rs = &packp.ReportStatus{UnpackStatus: "ok"}
		}
	} else if req.Packfile != nil {
		// Nothing will be stored, but the client is still sending: read it to the end.
		_, _ = io.Copy(io.Discard, req.Packfile)
	}
	rs.CommandStatuses = append(rs.CommandStatuses, rejected...)
	if req.Capabilities.Supports(capability.ReportStatus) {
		if err := rs.Encode(w); err != nil {
			return err
		}
	}
	return pushErr
}

func currentValue(sto storer.ReferenceStorer, name plumbing.ReferenceName) (plumbing.Hash, error) {
	ref, err := sto.Reference(name)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return ref.Hash(), nil
}
