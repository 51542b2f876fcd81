package manifestrelease

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/snapshot"
)

// FluxContentMediaType is the layer type of artifacts made by `flux push artifact`.
const FluxContentMediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"

// OCIReader reads manifests from OCI artifacts whose layer is a (gzipped) tarball.
type OCIReader struct {
	// Transport is the HTTP transport; nil means remote.DefaultTransport.
	Transport http.RoundTripper
}

// Fetch reads the artifact src names.
func (o *OCIReader) Fetch(ctx context.Context, kube kubernetes.Interface, namespace string, src *rollbackv1.OCIManifestSource, maxSize int64) (Fetched, error) {
	repo := strings.TrimPrefix(src.Repository, "oci://")
	refText, version := repo+":"+src.Tag, src.Tag
	if src.Digest != "" {
		refText, version = repo+"@"+src.Digest, src.Digest
	}
	var nameOpts []name.Option
	if src.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	ref, err := name.ParseReference(refText, nameOpts...)
	if err != nil {
		return Fetched{}, &SourceError{Reason: ReasonInvalidSpec, NeedsPerson: true, Message: fmt.Sprintf("spec.source.oci: %q is not an OCI reference: %v", refText, err)}
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithUserAgent("sluice-rollback-controller")}
	if o.Transport != nil {
		opts = append(opts, remote.WithTransport(o.Transport))
	}
	if src.SecretRef != nil {
		auth, err := registryAuth(ctx, kube, namespace, src.SecretRef.Name, ref.Context().RegistryStr())
		if err != nil {
			return Fetched{}, err
		}
		opts = append(opts, remote.WithAuth(auth))
	}
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return Fetched{}, registryError(refText, err)
	}
	img, err := desc.Image()
	if err != nil {
		return Fetched{}, &SourceError{Reason: ReasonNoManifests, NeedsPerson: true, Message: fmt.Sprintf("%s is not an artifact with layers: %v", refText, err)}
	}
	layer, err := contentLayer(img)
	if err != nil {
		return Fetched{}, &SourceError{Reason: ReasonNoManifests, NeedsPerson: true, Message: fmt.Sprintf("%s: %v", refText, err)}
	}
	rc, err := layer.Compressed()
	if err != nil {
		return Fetched{}, registryError(refText, err)
	}
	defer rc.Close()
	files, err := untar(rc, strings.Trim(path.Clean("/"+src.Path), "/"), maxSize)
	if err != nil {
		return Fetched{}, &SourceError{Reason: ReasonNoManifests, NeedsPerson: true, Message: fmt.Sprintf("%s: %v", refText, err)}
	}
	return Fetched{Files: files, Revision: desc.Digest.String(), Version: version}, nil
}

// contentLayer is Flux's content layer, or the only layer of the artifact.
func contentLayer(img v1.Image) (v1.Layer, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	for _, l := range layers {
		if mt, err := l.MediaType(); err == nil && string(mt) == FluxContentMediaType {
			return l, nil
		}
	}
	if len(layers) == 1 {
		return layers[0], nil
	}
	return nil, fmt.Errorf("the artifact has %d layers and none of type %s", len(layers), FluxContentMediaType)
}

// untar reads the manifest files under dir of a tarball, gzipped or not.
func untar(r io.Reader, dir string, maxSize int64) ([]snapshot.File, error) {
	br := bufio.NewReader(r)
	var stream io.Reader = br
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		defer gz.Close()
		stream = gz
	}
	tr := tar.NewReader(stream)
	var total int64
	found := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the layer's tarball: %w", err)
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		if hdr.Typeflag != tar.TypeReg || !isManifestFile(name) {
			continue
		}
		if dir != "" {
			if !strings.HasPrefix(name, dir+"/") {
				continue
			}
			name = strings.TrimPrefix(name, dir+"/")
		}
		if total += hdr.Size; total > maxSize {
			return nil, fmt.Errorf("the manifests are over %d bytes", maxSize)
		}
		data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil {
			return nil, err
		}
		found[name] = data
	}
	return asFiles(found, ""), nil
}

// registryAuth reads registry credentials from a kubernetes.io/dockerconfigjson Secret.
func registryAuth(ctx context.Context, kube kubernetes.Interface, namespace, secretName, registry string) (authn.Authenticator, error) {
	secret, err := kube.CoreV1().Secrets(namespace).Get(ctx, secretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &SourceError{Reason: ReasonSourceNotFound, NeedsPerson: true,
			Message: fmt.Sprintf("Secret %q, named by spec.source.oci.secretRef, does not exist in namespace %q", secretName, namespace)}
	}
	if err != nil {
		return nil, err
	}
	var cfg struct {
		Auths map[string]authn.AuthConfig `json:"auths"`
	}
	if err := json.Unmarshal(secret.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
		return nil, &SourceError{Reason: ReasonInvalidSpec, NeedsPerson: true,
			Message: fmt.Sprintf("Secret %q has no valid %s key: make it with kubectl create secret docker-registry", secretName, corev1.DockerConfigJsonKey)}
	}
	for host, a := range cfg.Auths {
		if strings.TrimPrefix(strings.TrimPrefix(host, "https://"), "http://") == registry {
			return authn.FromConfig(a), nil
		}
	}
	return nil, &SourceError{Reason: ReasonInvalidSpec, NeedsPerson: true, Message: fmt.Sprintf("Secret %q has no credentials for %s", secretName, registry)}
}

func registryError(ref string, err error) error {
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusNotFound:
			return &SourceError{Reason: ReasonSourceNotFound, NeedsPerson: true, Message: fmt.Sprintf("%s does not exist in the registry", ref)}
		case http.StatusUnauthorized, http.StatusForbidden:
			return &SourceError{Reason: ReasonSourceUnavailable, NeedsPerson: true, Message: fmt.Sprintf("the registry refused %s (%d): fix spec.source.oci.secretRef", ref, terr.StatusCode)}
		}
	}
	return &SourceError{Reason: ReasonSourceUnavailable, Message: fmt.Sprintf("%s: %v", ref, err)}
}
