{{/* What the rollback-controller adds to the shared Deployment (see sluice.controller in
_sluice.tpl): a writable emptyDir for the git cache of RevertCommits, as the root filesystem is
read-only. */}}
{{- define "sluice.controller" -}}
args:
  - --git-cache-dir=/var/cache/sluice-git
volumeMounts:
  - name: git-cache
    mountPath: /var/cache/sluice-git
volumes:
  - name: git-cache
    emptyDir:
      sizeLimit: {{ .Values.gitCache.sizeLimit | quote }}
{{- end -}}
