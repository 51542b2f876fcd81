{{/* The commitstatus-controller adds nothing to the shared Deployment: its flags go in extraArgs
(see sluice.controllerParts in _sluice.tpl). */}}
{{- define "commitstatus-controller.controller" -}}
{{- end -}}
