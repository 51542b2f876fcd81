{{/* What the rollback-controller adds to the shared Deployment (see sluice.controllerParts in
_sluice.tpl): writable emptyDirs for the git cache of RevertCommits and for the git repositories
ManifestRelease sources are read from, as the root filesystem is read-only. */}}
{{- define "rollback-controller.controller" -}}
args:
  - --git-cache-dir=/var/cache/sluice-git
  - --manifest-git-cache-dir=/var/cache/sluice-manifests-git
  {{- with .Values.manifestReleases.defaultServiceAccount }}
  - --default-service-account={{ . }}
  {{- end }}
volumeMounts:
  - name: git-cache
    mountPath: /var/cache/sluice-git
  - name: manifests-git-cache
    mountPath: /var/cache/sluice-manifests-git
volumes:
  - name: git-cache
    emptyDir:
      sizeLimit: {{ .Values.gitCache.sizeLimit | quote }}
  - name: manifests-git-cache
    emptyDir:
      sizeLimit: {{ .Values.manifestReleases.gitCacheSizeLimit | quote }}
{{- end -}}
