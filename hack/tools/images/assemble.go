package main

import (
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the unprivileged user and group every image runs as: distroless's "nonroot", which
// the charts' podSecurityContext also sets.
const User = "65532:65532"

// Labels are the OCI labels (and manifest annotations) of one image.
func Labels(spec Spec, stamp Stamp, source, license string) map[string]string {
	if spec.Source != "" {
		source = spec.Source
	}
	return map[string]string{
		"org.opencontainers.image.title":       spec.Name,
		"org.opencontainers.image.description": spec.Description,
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.version":     stamp.Version,
		"org.opencontainers.image.revision":    stamp.Revision,
		"org.opencontainers.image.created":     stamp.Created.Format(time.RFC3339),
		"org.opencontainers.image.licenses":    license,
	}
}

// platformImage is the image of spec for p: an empty base plus one layer with the binary, set to
// run it as User.
func platformImage(spec Spec, p Platform, layerFile string, created time.Time, labels map[string]string) (v1.Image, error) {
	layer, err := tarball.LayerFromFile(layerFile, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("read layer %s: %w", layerFile, err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: "hack/tools/images: /" + spec.Name, Comment: labels["org.opencontainers.image.version"]},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = p.OS, p.Arch, p.Variant
	cfg.Created = v1.Time{Time: created}
	cfg.Config = v1.Config{
		User:       User,
		Entrypoint: []string{"/" + spec.Name},
		WorkingDir: "/",
		Labels:     labels,
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels).(v1.Image), nil
}

// imageIndex joins the platform images into one multi-arch index carrying the same annotations.
func imageIndex(images map[Platform]v1.Image, platforms []Platform, labels map[string]string) v1.ImageIndex {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        images[p],
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch, Variant: p.Variant}},
		})
	}
	return mutate.Annotations(idx, labels).(v1.ImageIndex)
}
