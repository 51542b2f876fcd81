{{/* What the rollback-controller adds to the shared Deployment (see sluice.controller in
_sluice.tpl): a writable emptyDir for the git repositories ManifestRelease sources are read from,
as the root filesystem is read-only. */}}
{{- define "sluice.controller" -}}
args:
  - --manifest-git-cache-dir=/var/cache/sluice-manifests-git
volumeMounts:
  - name: manifests-git-cache
    mountPath: /var/cache/sluice-manifests-git
volumes:
  - name: manifests-git-cache
    emptyDir:
      sizeLimit: {{ .Values.manifestReleases.gitCacheSizeLimit | quote }}
{{- end -}}
