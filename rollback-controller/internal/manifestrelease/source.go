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
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
	"github.com/sluicehq/sluice/pkg/manifest"
	"github.com/sluicehq/sluice/pkg/snapshot"
	"github.com/sluicehq/sluice/pkg/text"
)

// Fetched is the desired version as the source gives it.
type Fetched struct {
	Files []snapshot.File
	// Revision names what was read: a commit SHA, an OCI manifest digest, ConfigMap versions.
	Revision string
	// Version is what people read when spec.version is empty; "" lets the digest name it.
	Version string
}

// SourceError is a source that cannot be read. NeedsPerson marks those a person must fix
// (Stalled); the others are retried.
type SourceError struct {
	Reason      string
	Message     string
	NeedsPerson bool
	// MissingConfigMap names the source ConfigMap that does not exist, which the release is
	// woken by when it is created (SourceWatches).
	MissingConfigMap string
}

func (e *SourceError) Error() string { return e.Message }

// Sources reads the manifests of a release's source.
type Sources struct {
	Kube   kubernetes.Interface
	Sluice sluice.Interface
	Git    *git.Cache
	OCI    *OCIReader
	// MaxSize bounds the bytes of manifests read from one source.
	MaxSize int64
}

// Fetch reads the source of mr.
func (s *Sources) Fetch(ctx context.Context, mr *rollbackv1.ManifestRelease) (Fetched, error) {
	src := mr.Spec.Source
	var fetched Fetched
	var err error
	switch {
	case src.Git != nil:
		fetched, err = s.fetchGit(ctx, mr.Namespace, src.Git)
	case src.OCI != nil:
		fetched, err = s.OCI.Fetch(ctx, s.Kube, mr.Namespace, src.OCI, s.MaxSize)
	case len(src.ConfigMaps) > 0:
		fetched, err = s.fetchConfigMaps(ctx, mr.Namespace, src.ConfigMaps)
	default:
		err = &SourceError{Reason: ReasonInvalidSpec, Message: "spec.source names no source: set git, oci or configMaps", NeedsPerson: true}
	}
	if apierrors.IsForbidden(err) {
		return Fetched{}, &SourceError{Reason: ReasonForbidden, Message: "reading the source: " + err.Error(), NeedsPerson: true}
	}
	if err != nil {
		return Fetched{}, err
	}
	if len(fetched.Files) == 0 {
		return Fetched{}, &SourceError{Reason: ReasonNoManifests, Message: fmt.Sprintf("the source at %s holds no manifests (.yaml, .yml or .json files)", fetched.Revision), NeedsPerson: true}
	}
	if mr.Spec.Version != "" {
		fetched.Version = mr.Spec.Version
	}
	return fetched, nil
}

func (s *Sources) fetchGit(ctx context.Context, namespace string, src *rollbackv1.GitManifestSource) (Fetched, error) {
	repo, err := s.openRepository(ctx, namespace, src.RepositoryRef.Name)
	if err != nil {
		return Fetched{}, err
	}
	var sha, version string
	switch {
	case src.Tag != "":
		sha, err = repo.FetchTag(ctx, src.Tag)
		version = src.Tag
	default:
		sha, err = s.fetchBranch(ctx, repo, src)
		version = src.Branch + "@" + text.ShortSHA(sha)
	}
	if err != nil {
		return Fetched{}, gitError(repo.URL(), err)
	}
	files, err := repo.ReadFiles(sha, src.Path, isManifestFile, s.MaxSize)
	if errors.Is(err, git.ErrPathNotFound) {
		return Fetched{}, &SourceError{Reason: ReasonNoManifests, Message: err.Error() + ": fix spec.source.git.path", NeedsPerson: true}
	}
	if err != nil {
		return Fetched{}, &SourceError{Reason: ReasonSourceUnavailable, Message: err.Error()}
	}
	return Fetched{Files: asFiles(files, ""), Revision: sha, Version: version}, nil
}

func (s *Sources) fetchBranch(ctx context.Context, repo *git.Repository, src *rollbackv1.GitManifestSource) (string, error) {
	if err := repo.Fetch(ctx, src.Branch); err != nil {
		return "", err
	}
	if src.Commit == "" {
		return repo.Resolve(src.Branch)
	}
	on, err := repo.IsOnBranch(src.Branch, src.Commit)
	if err != nil {
		return "", err
	}
	if !on {
		return "", fmt.Errorf("%w: commit %s is not on branch %s", git.ErrNotOnBranch, text.ShortSHA(src.Commit), src.Branch)
	}
	return src.Commit, nil
}

func (s *Sources) openRepository(ctx context.Context, namespace, name string) (*git.Repository, error) {
	repo, err := s.Sluice.ScmV1alpha1().ScmRepositories(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &SourceError{Reason: ReasonSourceNotFound, NeedsPerson: true,
			Message: fmt.Sprintf("ScmRepository %q does not exist in namespace %q: create it, or fix spec.source.git.repositoryRef", name, namespace)}
	}
	if err != nil {
		return nil, err
	}
	var auth git.Auth
	if a := repo.Spec.Auth; a != nil {
		secret, err := s.Kube.CoreV1().Secrets(namespace).Get(ctx, a.SecretRef.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, &SourceError{Reason: ReasonSourceNotFound, NeedsPerson: true,
				Message: fmt.Sprintf("Secret %q, named by ScmRepository %q, does not exist in namespace %q", a.SecretRef.Name, name, namespace)}
		}
		if err != nil {
			return nil, err
		}
		if auth, err = git.AuthFromSecret(a.Type, secret.Data); err != nil {
			return nil, &SourceError{Reason: ReasonInvalidSpec, NeedsPerson: true, Message: fmt.Sprintf("ScmRepository %q: %v", name, err)}
		}
	}
	handle, err := s.Git.Open(repo.Spec.URL, auth, git.Options{})
	if err != nil {
		return nil, &SourceError{Reason: ReasonInvalidSpec, NeedsPerson: true, Message: fmt.Sprintf("ScmRepository %q: %v", name, err)}
	}
	return handle, nil
}

// gitError words a failed fetch; refs that do not exist and refused credentials need a person.
func gitError(url string, err error) error {
	switch {
	case errors.Is(err, git.ErrTagNotFound), errors.Is(err, git.ErrBranchNotFound), errors.Is(err, git.ErrNotOnBranch):
		return &SourceError{Reason: ReasonSourceNotFound, Message: err.Error(), NeedsPerson: true}
	case errors.Is(err, git.ErrAuthentication), errors.Is(err, git.ErrRepositoryNotFound):
		return &SourceError{Reason: ReasonSourceUnavailable, Message: fmt.Sprintf("%s: %v", url, err), NeedsPerson: true}
	}
	return &SourceError{Reason: ReasonSourceUnavailable, Message: fmt.Sprintf("%s: %v", url, err)}
}

func (s *Sources) fetchConfigMaps(ctx context.Context, namespace string, refs []rollbackv1.ConfigMapReference) (Fetched, error) {
	var files []snapshot.File
	var revisions []string
	var total int64
	for _, ref := range refs {
		cm, err := s.Kube.CoreV1().ConfigMaps(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return Fetched{}, &SourceError{Reason: ReasonSourceNotFound, NeedsPerson: true, MissingConfigMap: ref.Name,
				Message: fmt.Sprintf("ConfigMap %q does not exist in namespace %q: create it, or fix spec.source.configMaps", ref.Name, namespace)}
		}
		if err != nil {
			return Fetched{}, err
		}
		for key, value := range cm.Data {
			total += int64(len(value))
			files = append(files, snapshot.File{Name: ref.Name + "/" + key, Data: []byte(value)})
		}
		revisions = append(revisions, ref.Name+"@"+cm.ResourceVersion)
	}
	if total > s.MaxSize {
		return Fetched{}, &SourceError{Reason: ReasonInvalidSpec, NeedsPerson: true, Message: fmt.Sprintf("the ConfigMaps hold %d bytes, over the limit of %d", total, s.MaxSize)}
	}
	slices.SortFunc(files, func(a, b snapshot.File) int { return strings.Compare(a.Name, b.Name) })
	return Fetched{Files: files, Revision: strings.Join(revisions, ",")}, nil
}

// isManifestFile keeps YAML and JSON files.
func isManifestFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func asFiles(m map[string][]byte, prefix string) []snapshot.File {
	files := make([]snapshot.File, 0, len(m))
	for name, data := range m {
		files = append(files, snapshot.File{Name: prefix + name, Data: data})
	}
	slices.SortFunc(files, func(a, b snapshot.File) int { return strings.Compare(a.Name, b.Name) })
	return files
}

// shortDigest abbreviates a digest ("sha256:<hex>") as a commit id is, keeping its algorithm.
func shortDigest(digest string) string {
	if algorithm, hex, ok := strings.Cut(digest, ":"); ok {
		return algorithm + ":" + text.ShortSHA(hex)
	}
	return text.ShortSHA(digest)
}

// definitionError is a test definition that cannot be read or parsed.
type definitionError struct{ msg string }

func (e *definitionError) Error() string { return e.msg }

// testObjects reads the definitions with kube and keeps the objects the filters select, scoped
// by mapper.
func testObjects(ctx context.Context, kube kubernetes.Interface, mapper meta.RESTMapper, mr *rollbackv1.ManifestRelease) ([]*unstructured.Unstructured, error) {
	t := mr.Spec.Test
	var selected []*unstructured.Unstructured
	scopeObjs := []*unstructured.Unstructured{}
	for _, def := range t.DefinitionsFrom {
		cm, err := kube.CoreV1().ConfigMaps(mr.Namespace).Get(ctx, def.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, &definitionError{fmt.Sprintf("test definitions ConfigMap %q does not exist in namespace %q", def.Name, mr.Namespace)}
		}
		if err != nil {
			return nil, err
		}
		data, ok := cm.Data[def.Key]
		if !ok {
			return nil, &definitionError{fmt.Sprintf("test definitions ConfigMap %q has no key %q", def.Name, def.Key)}
		}
		objs, err := manifest.ParseFile(def.Name+"/"+def.Key, []byte(data))
		if err != nil {
			return nil, &definitionError{"test definitions: " + err.Error()}
		}
		for _, obj := range objs {
			if manifest.Selects(filters(t), obj.GetName(), def.Name) {
				selected = append(selected, obj)
			}
		}
	}
	scope := manifest.ScopeFrom(mapper, scopeObjs)
	for _, obj := range selected {
		namespaced, err := scope(obj.GroupVersionKind())
		if err != nil {
			return nil, &definitionError{fmt.Sprintf("test %s: %v", manifest.RefOf(obj), err)}
		}
		if !namespaced {
			obj.SetNamespace("")
		} else if obj.GetNamespace() == "" {
			obj.SetNamespace(targetNamespace(mr))
		}
	}
	manifest.Sort(selected)
	return selected, nil
}

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
