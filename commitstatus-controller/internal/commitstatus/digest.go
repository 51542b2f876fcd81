package commitstatus

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	commitstatusv1alpha1 "github.com/sluicehq/sluice/api/commitstatus/v1alpha1"
	"github.com/sluicehq/sluice/commitstatus-controller/internal/resolve"
)

// Desired is everything that decides what the SCM shows for one CommitStatus. Two equal values
// need only one call.
type Desired struct {
	// Endpoint names the SCM and API the status lands on (resolve.Target.Endpoint).
	Endpoint    string
	Repository  string
	SHA         string
	Name        string
	Phase       string
	Description string
	URL         string
}

// DesiredFor is the state cs asks of target.
func DesiredFor(cs *commitstatusv1alpha1.CommitStatus, target *resolve.Target) Desired {
	return Desired{
		Endpoint:    target.Endpoint,
		Repository:  target.Repository.String(),
		SHA:         cs.Spec.SHA,
		Name:        cs.Spec.Name,
		Phase:       string(cs.Spec.Phase),
		Description: cs.Spec.Description,
		URL:         cs.Spec.URL,
	}
}

// digestVersion changes if the encoding does, so old digests read as different rather than
// colliding.
const digestVersion = "v1"

// Digest is a stable fingerprint of d, as stored in status.syncedDigest: "v1:" and the SHA-256 of
// its fields in a fixed order, each prefixed with its length so no two values encode alike.
func (d Desired) Digest() string {
	h := sha256.New()
	for _, field := range []string{d.Endpoint, d.Repository, d.SHA, d.Name, d.Phase, d.Description, d.URL} {
		fmt.Fprintf(h, "%d:%s;", len(field), field)
	}
	return digestVersion + ":" + hex.EncodeToString(h.Sum(nil))
}
