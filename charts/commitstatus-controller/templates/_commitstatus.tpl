{{/* commitstatus.secretRules: get, by name only, on Secrets and ConfigMaps, optionally limited to
secretAccess.resourceNames. */}}
{{- define "commitstatus.secretRules" -}}
- apiGroups: [""]
  resources: [secrets, configmaps]
  verbs: [get]
  {{- with .Values.secretAccess.resourceNames }}
  resourceNames: {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
