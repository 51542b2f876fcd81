{{/*
Shared templates of every Sluice chart. The source is hack/chart-common/_sluice.tpl;
`make generate` copies it into each chart, so edit it there, never in a chart.
*/}}

{{- define "sluice.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sluice.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
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

{{/* sluice.controller is the hook through which a chart adds what its own controller needs to
the shared Deployment: every chart defines it in templates/_controller.tpl, empty when it needs
nothing (Helm fails on the include of an undefined template, so it cannot be optional). It renders
a YAML map with any of the lists args (flags), ports (container ports), volumeMounts and volumes.
The user's extraArgs, extraPorts, extraVolumeMounts and extraVolumes come after the chart's, so a
flag in extraArgs overrides the chart's one. */}}
{{- define "sluice.controllerParts" -}}
{{- $parts := include "sluice.controller" . | fromYaml -}}
{{- if hasKey $parts "Error" -}}
{{- fail (printf "the sluice.controller template of chart %s is not a YAML map: %s" .Chart.Name $parts.Error) -}}
{{- end -}}
{{- $merged := dict -}}
{{- range $key, $extra := dict "args" "extraArgs" "ports" "extraPorts" "volumeMounts" "extraVolumeMounts" "volumes" "extraVolumes" -}}
{{- $_ := set $merged $key (concat (get $parts $key | default list) (get $.Values $extra | default list)) -}}
{{- end -}}
{{- toYaml $merged -}}
{{- end -}}

{{/* sluice.workload renders the ServiceAccount, Deployment, metrics Service, leader-election
Role, and the opt-in ServiceMonitor and PodDisruptionBudget. */}}
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
      labels: {{- include "sluice.selectorLabels" . | nindent 8 }}
      {{- with .Values.podAnnotations }}
      annotations: {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ include "sluice.serviceAccountName" . }}
      securityContext: {{- toYaml .Values.podSecurityContext | nindent 8 }}
      containers:
        - name: controller
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          args:
            - --leader-elect={{ .Values.leaderElection.enabled }}
            - --leader-election-namespace={{ .Release.Namespace }}
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
---
# Leader election and Events need only the release namespace.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ include "sluice.fullname" . }}-leader-election
  namespace: {{ .Release.Namespace }}
  labels: {{- include "sluice.labels" . | nindent 4 }}
rules:
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [get, create, update]
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
  minAvailable: {{ .Values.podDisruptionBudget.minAvailable }}
  selector:
    matchLabels: {{- include "sluice.selectorLabels" . | nindent 6 }}
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
