{{/* The gate-controller's --targets flag, rendered from the targets value and added to the shared
Deployment (see sluice.controllerParts in _sluice.tpl); a --targets in the user's extraArgs comes after
it and wins. */}}
{{- define "gate-controller.controller" -}}
{{- $targets := list -}}
{{- range .Values.targets -}}
{{- $target := . -}}
{{- range .resources -}}
{{- $resource := ternary . (printf "%s.%s" . $target.group) (eq $target.group "") -}}
{{- $targets = append $targets (printf "%s=%s" $resource $target.mode) -}}
{{- end -}}
{{- end -}}
args:
  - {{ printf "--targets=%s" (join "," $targets) | quote }}
{{- end -}}
