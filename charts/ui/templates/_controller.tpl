{{/* The UI's flags and its page port, added to the shared Deployment (see sluice.controllerParts
in _sluice.tpl): it serves on every address of the pod, so the Service reaches it. In proxy mode
it believes the ID token the proxy forwards from identity.proxy.trustedProxies, verified
against identity.oidc.issuerURL (an address alone is never believed); in oidc mode it signs
people in itself, reading the client secret and cookie key from Secrets mounted as files. Both modes need identity.impersonate.groups. */}}
{{- define "ui.controller" -}}
{{- $identity := .Values.identity -}}
{{- $oidc := $identity.oidc | default dict -}}
args:
  - {{ printf "--listen=:%v" .Values.http.port | quote }}
  - {{ printf "--identity=%s" $identity.mode | quote }}
  {{- if $identity.anonymous }}
  - {{ printf "--anonymous=%s" $identity.anonymous | quote }}
  {{- end }}
  {{- if eq $identity.mode "proxy" }}
  {{- $trusted := $identity.proxy.trustedProxies | default list }}
  {{- if not $trusted }}
  {{- fail "identity.mode proxy needs identity.proxy.trustedProxies: the CIDRs of the authenticating proxy, the only addresses its ID token is believed from" }}
  {{- end }}
  {{- if not $oidc.issuerURL }}
  {{- fail "identity.mode proxy needs identity.oidc.issuerURL and .clientID: the proxy's ID token is verified against the issuer, since an address alone is never believed" }}
  {{- end }}
  - {{ printf "--proxy-user-header=%s" $identity.proxy.userHeader | quote }}
  - {{ printf "--proxy-groups-header=%s" ($identity.proxy.groupsHeader | default "") | quote }}
  - {{ printf "--trusted-proxies=%s" (join "," $trusted) | quote }}
  {{- with $identity.proxy.allowedAdminGroups }}
  - {{ printf "--proxy-allowed-admin-groups=%s" (join "," .) | quote }}
  {{- end }}
  {{- include "ui.oidcClaimArgs" $oidc | nindent 2 }}
  {{- end }}
  {{- if and (has $identity.mode (list "proxy" "oidc")) (not ($identity.impersonate | default dict).groups) }}
  {{- fail (printf "identity.mode %s needs identity.impersonate.groups: the groups a person may be impersonated into (RBAC resourceNames), so that the UI's token can never become system:masters or another admin group" $identity.mode) }}
  {{- end }}
  {{- if eq $identity.mode "oidc" }}
  {{- range $field := list "issuerURL" "clientID" "redirectURL" }}
  {{- if not (get $oidc $field) }}
  {{- fail (printf "identity.mode oidc needs identity.oidc.%s" $field) }}
  {{- end }}
  {{- end }}
  {{- if or (not ($oidc.clientSecret | default dict).name) (not ($oidc.cookieKey | default dict).name) }}
  {{- fail "identity.mode oidc needs identity.oidc.clientSecret.name and identity.oidc.cookieKey.name: existing Secrets holding the client secret and at least 32 random bytes" }}
  {{- end }}
  {{- include "ui.oidcClaimArgs" $oidc | nindent 2 }}
  - {{ printf "--oidc-redirect-url=%s" $oidc.redirectURL | quote }}
  - "--oidc-client-secret-file=/etc/sluice-ui/oidc/client-secret/{{ $oidc.clientSecret.key }}"
  - "--oidc-cookie-key-file=/etc/sluice-ui/oidc/cookie-key/{{ $oidc.cookieKey.key }}"
  {{- end }}
{{- /* /tmp is the one writable folder of the read-only root: a diff of a repository reached
over SSH stages its known_hosts lines there (docs/ui.md, "What changed"). */}}
volumeMounts:
  - name: tmp
    mountPath: /tmp
  {{- if eq $identity.mode "oidc" }}
  - name: oidc-client-secret
    mountPath: /etc/sluice-ui/oidc/client-secret
    readOnly: true
  - name: oidc-cookie-key
    mountPath: /etc/sluice-ui/oidc/cookie-key
    readOnly: true
  {{- end }}
volumes:
  - name: tmp
    emptyDir:
      sizeLimit: 16Mi
  {{- if eq $identity.mode "oidc" }}
  - name: oidc-client-secret
    secret:
      secretName: {{ $oidc.clientSecret.name | quote }}
      items: [{key: {{ $oidc.clientSecret.key | quote }}, path: {{ $oidc.clientSecret.key | quote }}}]
  - name: oidc-cookie-key
    secret:
      secretName: {{ $oidc.cookieKey.name | quote }}
      items: [{key: {{ $oidc.cookieKey.key | quote }}, path: {{ $oidc.cookieKey.key | quote }}}]
  {{- end }}
ports:
  - name: http
    containerPort: {{ .Values.http.port }}
{{- end -}}

{{/* The issuer, the client and the claim mapping, as kube-apiserver's --oidc-* flags. */}}
{{- define "ui.oidcClaimArgs" -}}
- {{ printf "--oidc-issuer-url=%s" .issuerURL | quote }}
- {{ printf "--oidc-client-id=%s" .clientID | quote }}
- {{ printf "--oidc-username-claim=%s" (.usernameClaim | default "sub") | quote }}
- {{ printf "--oidc-username-prefix=%s" (.usernamePrefix | default "") | quote }}
- {{ printf "--oidc-groups-claim=%s" (.groupsClaim | default "") | quote }}
- {{ printf "--oidc-groups-prefix=%s" (.groupsPrefix | default "") | quote }}
{{- end -}}
