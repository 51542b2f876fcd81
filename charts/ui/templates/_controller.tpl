{{/* The UI's flags and its page port, added to the shared Deployment (see sluice.controllerParts
in _sluice.tpl): it serves on every address of the pod, so the Service reaches it, and with
identity.mode proxy believes the identity headers only from identity.proxy.trustedProxies. */}}
{{- define "ui.controller" -}}
{{- $identity := .Values.identity -}}
args:
  - {{ printf "--listen=:%v" .Values.http.port | quote }}
  - {{ printf "--identity=%s" $identity.mode | quote }}
  {{- if $identity.anonymous }}
  - {{ printf "--anonymous=%s" $identity.anonymous | quote }}
  {{- end }}
  {{- if eq $identity.mode "proxy" }}
  {{- $trusted := $identity.proxy.trustedProxies | default list }}
  {{- if not $trusted }}
  {{- fail "identity.mode proxy needs identity.proxy.trustedProxies: the CIDRs of the authenticating proxy, whose identity headers the UI believes" }}
  {{- end }}
  - {{ printf "--proxy-user-header=%s" $identity.proxy.userHeader | quote }}
  - {{ printf "--proxy-groups-header=%s" ($identity.proxy.groupsHeader | default "") | quote }}
  - {{ printf "--trusted-proxies=%s" (join "," $trusted) | quote }}
  {{- with $identity.proxy.allowedAdminGroups }}
  - {{ printf "--proxy-allowed-admin-groups=%s" (join "," .) | quote }}
  {{- end }}
  {{- end }}
ports:
  - name: http
    containerPort: {{ .Values.http.port }}
{{- end -}}
