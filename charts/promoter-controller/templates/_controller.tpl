{{/* What the promoter adds to the shared Deployment (see sluice.controllerParts in _sluice.tpl): a
writable emptyDir for its git cache, as the root filesystem is read-only, and the webhook
receiver's flag and port. */}}
{{- define "promoter-controller.controller" -}}
args:
  - --git-cache-dir=/var/cache/sluice-git
  {{- if .Values.webhook.enabled }}
  - --webhook-bind-address=:{{ .Values.webhook.port }}
  {{- end }}
{{- if .Values.webhook.enabled }}
ports:
  - name: webhook
    containerPort: {{ .Values.webhook.port }}
{{- end }}
volumeMounts:
  - name: git-cache
    mountPath: /var/cache/sluice-git
volumes:
  - name: git-cache
    emptyDir:
      sizeLimit: {{ .Values.gitCache.sizeLimit | quote }}
{{- end -}}
