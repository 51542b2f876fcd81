{{/*
Shared templates of every Sluice chart. The source is hack/chart-common/_sluice.tpl;
`make generate` copies it into each chart, so edit it there, never in a chart.
*/}}

{{- define "sluice.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* sluice.fullname names every object of the release: fullnameOverride, or the release name
followed by the chart's name (nameOverride) unless the release name holds it already, as a whole
dash-separated part: the release sluice does not hold the chart ui, though "sluice" contains "ui". */}}
{{- define "sluice.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if regexMatch (printf "(^|-)%s(-|$)" (regexQuoteMeta $name)) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "sluice.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sluice.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sluice.labels" -}}
{{ include "sluice.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: sluice
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "sluice.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "sluice.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* sluice.image is the image reference: global.imageRegistry or image.registry, the repository,
global.imageTag or image.tag (the chart's appVersion by default) and, when set, the digest that
pins it. */}}
{{- define "sluice.image" -}}
{{- $global := .Values.global | default dict -}}
{{- $registry := $global.imageRegistry | default .Values.image.registry -}}
{{- $ref := .Values.image.repository -}}
{{- if $registry }}{{ $ref = printf "%s/%s" $registry $ref }}{{ end -}}
{{- $ref = printf "%s:%s" $ref ($global.imageTag | default .Values.image.tag | default .Chart.AppVersion) -}}
{{- if .Values.image.digest }}{{ $ref = printf "%s@%s" $ref .Values.image.digest }}{{ end -}}
{{- $ref -}}
{{- end -}}

{{/* sluice.leaseName is the leader-election Lease of this release: named after the release, so
two releases of a chart in one namespace (shards) never share one. For the default release name,
such as gate-controller, it is the binary's default, gate-controller-leader. */}}
{{- define "sluice.leaseName" -}}
{{- printf "%s-leader" (include "sluice.fullname" . | trunc 56 | trimSuffix "-") -}}
{{- end -}}

{{/* <chart>.controller is the hook through which a chart adds what its own controller needs to
the shared Deployment: every chart defines it in templates/_controller.tpl, named after the chart
(template names are global across a parent chart and its subcharts), empty when it needs nothing.
It renders a YAML map with any of the lists args (flags), ports (container ports), volumeMounts
and volumes, and containers: whole containers the chart runs beside its controller in the pod
(a sidecar, such as the UI's oauth2-proxy). The user's extraArgs, extraPorts, extraVolumeMounts
and extraVolumes come after the chart's, so a flag in extraArgs overrides the chart's one. */}}
{{- define "sluice.controllerParts" -}}
{{- $parts := include (printf "%s.controller" .Chart.Name) . | fromYaml -}}
{{- if hasKey $parts "Error" -}}
{{- fail (printf "the %s.controller template is not a YAML map: %s" .Chart.Name $parts.Error) -}}
{{- end -}}
{{- $merged := dict -}}
{{- range $key, $extra := dict "args" "extraArgs" "ports" "extraPorts" "volumeMounts" "extraVolumeMounts" "volumes" "extraVolumes" -}}
{{- $_ := set $merged $key (concat (get $parts $key | default list) (get $.Values $extra | default list)) -}}
{{- end -}}
{{- $_ := set $merged "containers" (get $parts "containers" | default list) -}}
{{- toYaml $merged -}}
{{- end -}}

{{/* sluice.workload renders the ServiceAccount, Deployment, metrics Service, the leader-election
Role (only with leaderElection.enabled: a replica that never elects needs no Lease), and the
opt-in ServiceMonitor, PodDisruptionBudget and NetworkPolicy. */}}
{{- define "sluice.workload" -}}
{{- $parts := include "sluice.controllerParts" . | fromYaml -}}
{{- if .Values.serviceAccount.create }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "sluice.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
  labels: {{- include "sluice.labels" . | nindent 4 }}
  {{- with .Values.serviceAccount.annotations }}
  annotations: {{- toYaml . | nindent 4 }}
  {{- end }}
automountServiceAccountToken: true
---
{{- end }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "sluice.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels: {{- include "sluice.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels: {{- include "sluice.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels: {{- include "sluice.labels" . | nindent 8 }}
        {{- with .Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with .Values.podAnnotations }}
      annotations: {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ include "sluice.serviceAccountName" . }}
      {{- with concat ((.Values.global | default dict).imagePullSecrets | default list) .Values.imagePullSecrets }}
      imagePullSecrets: {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext: {{- toYaml .Values.podSecurityContext | nindent 8 }}
      containers:
        - name: controller
          image: {{ include "sluice.image" . | quote }}
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          args:
            - --leader-elect={{ .Values.leaderElection.enabled }}
            - --leader-election-namespace={{ .Release.Namespace }}
            - --leader-election-id={{ include "sluice.leaseName" . }}
            - --namespace={{ .Values.watchNamespace }}
            - --watch-label-selector={{ .Values.watchLabelSelector }}
            - --workers={{ .Values.workers }}
            - --kube-api-qps={{ .Values.kubeAPI.qps }}
            - --kube-api-burst={{ .Values.kubeAPI.burst }}
            - --log-format={{ .Values.log.format }}
            - --v={{ .Values.log.level }}
            - --metrics-bind-address=:{{ .Values.metrics.port }}
            - --health-probe-bind-address=:{{ .Values.probes.port }}
            {{- range $parts.args }}
            - {{ . | quote }}
            {{- end }}
          env:
            - name: POD_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            # The Go runtime collects garbage before the container reaches its memory limit.
            - name: GOMEMLIMIT
              valueFrom:
                resourceFieldRef:
                  resource: limits.memory
          ports:
            - name: metrics
              containerPort: {{ .Values.metrics.port }}
            - name: probes
              containerPort: {{ .Values.probes.port }}
            {{- with $parts.ports }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          livenessProbe:
            httpGet: {path: /livez, port: probes}
            periodSeconds: 10
          readinessProbe:
            httpGet: {path: /readyz, port: probes}
            periodSeconds: 5
          securityContext: {{- toYaml .Values.securityContext | nindent 12 }}
          resources: {{- toYaml .Values.resources | nindent 12 }}
          {{- with $parts.volumeMounts }}
          volumeMounts: {{- toYaml . | nindent 12 }}
          {{- end }}
        {{- range $parts.containers }}
        - {{ toYaml . | nindent 10 | trim }}
        {{- end }}
      {{- with $parts.volumes }}
      volumes: {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.nodeSelector }}
      nodeSelector: {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.tolerations }}
      tolerations: {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.affinity }}
      affinity: {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- range . }}
        {{- $constraint := . }}
        {{- if not .labelSelector }}
        {{- $constraint = merge (dict "labelSelector" (dict "matchLabels" (include "sluice.selectorLabels" $ | fromYaml))) . }}
        {{- end }}
        - {{ toYaml $constraint | nindent 10 | trim }}
        {{- end }}
      {{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ include "sluice.fullname" . }}-metrics
  namespace: {{ .Release.Namespace }}
  labels: {{- include "sluice.labels" . | nindent 4 }}
spec:
  selector: {{- include "sluice.selectorLabels" . | nindent 4 }}
  ports:
    - name: metrics
      port: {{ .Values.metrics.port }}
      targetPort: metrics
{{- if .Values.leaderElection.enabled }}
---
# Leader election: this release's Lease only. RBAC cannot name the object of a create, so create
# is granted on Leases in the release namespace; get and update only on this release's Lease.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ include "sluice.fullname" . }}-leader-election
  namespace: {{ .Release.Namespace }}
  labels: {{- include "sluice.labels" . | nindent 4 }}
rules:
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [create]
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    resourceNames: [{{ include "sluice.leaseName" . | quote }}]
    verbs: [get, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ include "sluice.fullname" . }}-leader-election
  namespace: {{ .Release.Namespace }}
  labels: {{- include "sluice.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ include "sluice.fullname" . }}-leader-election
subjects:
  - kind: ServiceAccount
    name: {{ include "sluice.serviceAccountName" . }}
    namespace: {{ .Release.Namespace }}
{{- end }}
{{- if .Values.metrics.serviceMonitor.enabled }}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ include "sluice.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels: {{- include "sluice.labels" . | nindent 4 }}
    {{- with .Values.metrics.serviceMonitor.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels: {{- include "sluice.selectorLabels" . | nindent 6 }}
  endpoints:
    - port: metrics
      interval: {{ .Values.metrics.serviceMonitor.interval }}
      # The Sluice series label objects by namespace and name: keep those over the target's own
      # namespace label, as for kube-state-metrics, so dashboards and alerts name the object.
      honorLabels: true
{{- end }}
{{- if .Values.podDisruptionBudget.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "sluice.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels: {{- include "sluice.labels" . | nindent 4 }}
spec:
  # Never minAvailable: at one replica it would forbid every eviction and block node drains.
  maxUnavailable: {{ .Values.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels: {{- include "sluice.selectorLabels" . | nindent 6 }}
{{- end }}
{{- if .Values.networkPolicy.enabled }}
---
{{ include "sluice.networkPolicy" (dict "root" . "ports" $parts.ports) }}
{{- end }}
{{- end -}}

{{/* sluice.networkPolicy admits ingress to the metrics and probe ports and the chart's own ports
(such as the promoter's webhook), and with egress.enabled limits egress to DNS and the listed
ports. Called with a dict: root (the chart's context) and ports (its container ports). */}}
{{- define "sluice.networkPolicy" -}}
{{- $np := .root.Values.networkPolicy -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "sluice.fullname" .root }}
  namespace: {{ .root.Release.Namespace }}
  labels: {{- include "sluice.labels" .root | nindent 4 }}
spec:
  podSelector:
    matchLabels: {{- include "sluice.selectorLabels" .root | nindent 6 }}
  policyTypes: [Ingress{{ if $np.egress.enabled }}, Egress{{ end }}]
  ingress:
    - ports: [{port: metrics, protocol: TCP}]
      {{- with $np.metricsFrom }}
      from: {{- toYaml . | nindent 8 }}
      {{- end }}
    # kubelet probes come from the node; most network plugins never filter them, some need this.
    - ports: [{port: probes, protocol: TCP}]
    {{- range .ports }}
    - ports: [{port: {{ .containerPort }}, protocol: TCP}]
    {{- end }}
  {{- if $np.egress.enabled }}
  egress:
    - ports: [{port: 53, protocol: UDP}, {port: 53, protocol: TCP}]
    {{- with $np.egress.ports }}
    - ports:
        {{- range . }}
        - {port: {{ . }}, protocol: TCP}
        {{- end }}
    {{- end }}
    {{- with $np.egress.extraRules }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
{{- end -}}

{{/* sluice.crds renders the CRDs in the chart's files/crds (the API groups it owns, copied there
by make generate) as ordinary templates, so upgrades upgrade them, with crds.keep's annotations
that keep them when Helm uninstalls the release or Argo CD prunes or deletes its Application. */}}
{{- define "sluice.crds" -}}
{{- if .Values.crds.enabled }}
{{- range $path, $_ := .Files.Glob "files/crds/*.yaml" }}
{{- $crd := $.Files.Get $path | fromYaml }}
{{- $meta := $crd.metadata }}
{{- $_ := set $meta "labels" (merge ($meta.labels | default dict) (include "sluice.labels" $ | fromYaml)) }}
{{- $annotations := $meta.annotations | default dict }}
{{- if $.Values.crds.keep }}
{{- $_ := set $annotations "helm.sh/resource-policy" "keep" }}
{{- $_ := set $annotations "argocd.argoproj.io/sync-options" "Prune=false,Delete=false" }}
{{- end }}
{{- $_ := set $meta "annotations" $annotations }}
---
{{ toYaml $crd }}
{{- end }}
{{- end }}
{{- end -}}

{{/* sluice.clusterRoleBinding binds the chart's ClusterRole to its ServiceAccount. */}}
{{- define "sluice.clusterRoleBinding" -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ include "sluice.fullname" . }}
  labels: {{- include "sluice.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ include "sluice.fullname" . }}
subjects:
  - kind: ServiceAccount
    name: {{ include "sluice.serviceAccountName" . }}
    namespace: {{ .Release.Namespace }}
{{- end -}}
