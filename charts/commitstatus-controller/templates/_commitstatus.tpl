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

{{/* commitstatus.secretWatchRule: list and watch on Secrets, for secretAccess.watch. RBAC cannot
narrow list or watch by resourceNames, so the two do not combine. */}}
{{- define "commitstatus.secretWatchRule" -}}
- apiGroups: [""]
  resources: [secrets]
  verbs: [list, watch]
{{- end -}}
