{{/* The UI's flags and its page port, added to the shared Deployment (see sluice.controllerParts
in _sluice.tpl): it serves on every address of the pod, so the Service reaches it. In proxy mode
it believes the ID token the proxy forwards from identity.proxy.trustedProxies, verified
against identity.oidc.issuerURL (an address alone is never believed); in oidc mode it signs
people in itself, reading the client secret and cookie key from Secrets mounted as files. Both modes need identity.impersonate.groups.
With identity.proxy.sidecar.enabled, oauth2-proxy runs in the UI's pod (ui.sidecar) and reaches
the UI on a Unix socket; the UI's page port then listens on loopback only. */}}
{{- define "ui.controller" -}}
{{- $identity := .Values.identity -}}
{{- $oidc := $identity.oidc | default dict -}}
{{- $sidecar := include "ui.sidecarEnabled" . -}}
args:
  {{- if $sidecar }}
  {{- /* Only the sidecar proxy reaches the pages, on the socket; the port stays on loopback. */}}
  - {{ printf "--listen=127.0.0.1:%v" .Values.http.port | quote }}
  - "--proxy-socket=/run/sluice-ui/ui.sock"
  {{- else }}
  - {{ printf "--listen=:%v" .Values.http.port | quote }}
  {{- end }}
  - {{ printf "--identity=%s" $identity.mode | quote }}
  {{- if $identity.anonymous }}
  - {{ printf "--anonymous=%s" $identity.anonymous | quote }}
  {{- end }}
  {{- if eq $identity.mode "proxy" }}
  {{- $trusted := $identity.proxy.trustedProxies | default list }}
  {{- if and (not $trusted) (not $sidecar) }}
  {{- fail "identity.mode proxy needs identity.proxy.trustedProxies (the CIDRs of an authenticating proxy in another pod, the only addresses its ID token is believed from) or identity.proxy.sidecar.enabled (oauth2-proxy in the UI's pod)" }}
  {{- end }}
  {{- if not $oidc.issuerURL }}
  {{- fail "identity.mode proxy needs identity.oidc.issuerURL and .clientID: the proxy's ID token is verified against the issuer, since an address alone is never believed" }}
  {{- end }}
  - {{ printf "--proxy-user-header=%s" $identity.proxy.userHeader | quote }}
  - {{ printf "--proxy-groups-header=%s" ($identity.proxy.groupsHeader | default "") | quote }}
  {{- if not $sidecar }}
  - {{ printf "--trusted-proxies=%s" (join "," $trusted) | quote }}
  {{- end }}
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
  {{- if $sidecar }}
  - name: proxy-socket
    mountPath: /run/sluice-ui
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
  {{- if $sidecar }}
  {{- include "ui.sidecarVolumes" . | nindent 2 }}
  {{- end }}
ports:
  - name: http
    containerPort: {{ .Values.http.port }}
{{- if $sidecar }}
containers:
  - {{ include "ui.sidecar" . | nindent 4 | trim }}
{{- end }}
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


{{/* ui.sidecarEnabled is "true" when an oauth2-proxy sidecar fronts the UI (proxy mode with
identity.proxy.sidecar.enabled), else empty. */}}
{{- define "ui.sidecarEnabled" -}}
{{- if and (eq .Values.identity.mode "proxy") ((.Values.identity.proxy.sidecar | default dict).enabled) -}}true{{- end -}}
{{- end -}}

{{/* ui.sidecar is the oauth2-proxy container of proxy mode with identity.proxy.sidecar.enabled: it
signs people in at identity.oidc.issuerURL as the client identity.oidc.clientID and forwards to
the UI's Unix socket in the emptyDir both mount, passing the person's ID token on, which the UI
verifies against the same issuer for the same client. It runs with the chart's security context
(non-root, read-only root filesystem, no capability). */}}
{{- define "ui.sidecar" -}}
{{- $sidecar := .Values.identity.proxy.sidecar -}}
{{- $oidc := .Values.identity.oidc -}}
{{- range $field := list "redirectURL" "image" }}
{{- if not (get $sidecar $field) }}
{{- fail (printf "identity.proxy.sidecar.enabled needs identity.proxy.sidecar.%s" $field) }}
{{- end }}
{{- end }}
{{- if or (not $sidecar.clientSecret.name) (not $sidecar.cookieSecret.name) }}
{{- fail "identity.proxy.sidecar.enabled needs identity.proxy.sidecar.clientSecret.name and .cookieSecret.name: existing Secrets holding the proxy's client secret and a cookie secret of 16, 24 or 32 bytes" }}
{{- end }}
name: oauth2-proxy
image: {{ $sidecar.image | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
args:
  - --provider=oidc
  - {{ printf "--oidc-issuer-url=%s" $oidc.issuerURL | quote }}
  - {{ printf "--client-id=%s" $oidc.clientID | quote }}
  - "--client-secret-file=/etc/oauth2-proxy/client-secret/{{ $sidecar.clientSecret.key }}"
  - "--cookie-secret-file=/etc/oauth2-proxy/cookie-secret/{{ $sidecar.cookieSecret.key }}"
  - {{ printf "--redirect-url=%s" $sidecar.redirectURL | quote }}
  - {{ printf "--oidc-groups-claim=%s" ($oidc.groupsClaim | default "groups") | quote }}
  - --email-domain=*
  - --upstream=unix:///run/sluice-ui/ui.sock
  - {{ printf "--http-address=0.0.0.0:%v" $sidecar.port | quote }}
  - --pass-authorization-header=true
  - --skip-provider-button=true
  {{- range $sidecar.extraArgs }}
  - {{ . | quote }}
  {{- end }}
ports:
  - name: proxy
    containerPort: {{ $sidecar.port }}
readinessProbe:
  httpGet: {path: /ping, port: proxy}
  periodSeconds: 5
securityContext: {{- toYaml .Values.securityContext | nindent 2 }}
resources: {{- toYaml $sidecar.resources | nindent 2 }}
volumeMounts:
  - name: proxy-socket
    mountPath: /run/sluice-ui
  - name: oauth2-proxy-client-secret
    mountPath: /etc/oauth2-proxy/client-secret
    readOnly: true
  - name: oauth2-proxy-cookie-secret
    mountPath: /etc/oauth2-proxy/cookie-secret
    readOnly: true
{{- end -}}

{{/* ui.sidecarVolumes: the socket's emptyDir, shared by the UI and the proxy (both run as the
chart's user), and the proxy's Secrets, as files. */}}
{{- define "ui.sidecarVolumes" -}}
{{- $sidecar := .Values.identity.proxy.sidecar -}}
- name: proxy-socket
  emptyDir: {}
- name: oauth2-proxy-client-secret
  secret:
    secretName: {{ $sidecar.clientSecret.name | quote }}
    items: [{key: {{ $sidecar.clientSecret.key | quote }}, path: {{ $sidecar.clientSecret.key | quote }}}]
- name: oauth2-proxy-cookie-secret
  secret:
    secretName: {{ $sidecar.cookieSecret.name | quote }}
    items: [{key: {{ $sidecar.cookieSecret.key | quote }}, path: {{ $sidecar.cookieSecret.key | quote }}}]
{{- end -}}
