{{/* What the commitstatus-controller adds to the shared Deployment (see sluice.controllerParts in
_sluice.tpl): the import's flags, and the status webhook receiver's flag and port. */}}
{{- define "commitstatus-controller.controller" -}}
args:
  - --import-scm-statuses={{ .Values.import.enabled }}
  - --import-poll-interval={{ .Values.import.pollInterval }}
  {{- if and .Values.import.enabled .Values.import.webhook.enabled }}
  - --webhook-bind-address=:{{ .Values.import.webhook.port }}
  {{- end }}
{{- if and .Values.import.enabled .Values.import.webhook.enabled }}
ports:
  - name: status-webhook
    containerPort: {{ .Values.import.webhook.port }}
{{- end }}
{{- end -}}
