package manifestrelease

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	sluice "github.com/sluicehq/sluice/api/generated/clientset/versioned"
	rollbackv1 "github.com/sluicehq/sluice/api/rollback/v1alpha1"
	"github.com/sluicehq/sluice/pkg/git"
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
