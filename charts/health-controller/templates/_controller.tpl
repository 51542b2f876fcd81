{{/* The health-controller's own flags, added to the shared Deployment (see sluice.controllerParts in
_sluice.tpl); the user's extraArgs come after them and can override them. */}}
{{- define "health-controller.controller" -}}
args:
  - {{ printf "--library-configmap-name=%s" .Values.library.name | quote }}
  - {{ printf "--library-configmap-namespace=%s" .Release.Namespace | quote }}
  - {{ printf "--no-cross-namespace-refs=%t" .Values.noCrossNamespaceRefs | quote }}
  - {{ printf "--default-service-account=%s" .Values.defaultServiceAccount | quote }}
  - {{ printf "--cel-cost-limit=%d" (int64 .Values.celCostLimit) | quote }}
{{- end -}}
