{{/* The commitstatus-controller adds nothing to the shared Deployment: its flags go in extraArgs
(see sluice.controller in _sluice.tpl). */}}
{{- define "sluice.controller" -}}
{{- end -}}
