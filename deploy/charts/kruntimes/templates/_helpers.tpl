{{- /*
Helpers shared by this chart and its subcharts (Helm's named templates are global to the
chart tree, so the subcharts in charts/ use these; they are installed only through this
chart). Arguments are dicts: "ctx" is the calling chart's root context.
*/ -}}

{{- /* The labels of every object: (dict "ctx" . "name" "kruntimes-scheduler" "component" "scheduler") */ -}}
{{- define "kruntimes.labels" -}}
{{ include "kruntimes.selectorLabels" . }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: kruntimes
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /* What a Deployment selects its Pods by (immutable after install): (dict "ctx" . "name" NAME) */ -}}
{{- define "kruntimes.selectorLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- end }}

{{- /*
An image reference: (dict "image" .Values.image "global" .Values.global "appVersion" .Chart.AppVersion).
A digest wins over a tag; the tag defaults to global.image.tag, then to the chart's appVersion.
*/ -}}
{{- define "kruntimes.image" -}}
{{- $registry := .global.image.registry | default "" -}}
{{- $repository := .image.repository -}}
{{- if $registry }}{{ $repository = printf "%s/%s" (trimSuffix "/" $registry) $repository }}{{ end -}}
{{- if .image.digest -}}
{{ $repository }}@{{ .image.digest }}
{{- else -}}
{{ $repository }}:{{ .image.tag | default .global.image.tag | default .appVersion }}
{{- end -}}
{{- end }}

{{- /* Pod-level security: non-root, RuntimeDefault seccomp; group-readable mounted Secrets. */ -}}
{{- define "kruntimes.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "kruntimes.containerSecurityContext" -}}
runAsNonRoot: true
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- /* Environment every service reads: identity, log level, tracing. (dict "ctx" . "name" NAME) */ -}}
{{- /*
The V8 heap flags of a Node container with this memory limit (a quantity in Mi or Gi; any
other form: none, V8's own sizing), as nodeHeapOptions of libs/runtime-workload derives
them for runtimed (tools/chart-checks compares the two): semi-space 1 MiB per 128 MiB of
limit (1-16), old space the limit less 64 MiB (Node beside its heap) and three semi-spaces,
at least 32 MiB.
*/ -}}
{{- define "kruntimes.nodeHeapOptions" -}}
{{- $limit := toString . -}}
{{- $mib := 0 -}}
{{- if regexMatch "^[0-9]+Mi$" $limit -}}
{{- $mib = trimSuffix "Mi" $limit | int -}}
{{- else if regexMatch "^[0-9]+Gi$" $limit -}}
{{- $mib = mul (trimSuffix "Gi" $limit | int) 1024 -}}
{{- end -}}
{{- if gt $mib 0 -}}
{{- $semi := max 1 (min 16 (div $mib 128)) -}}
{{- $old := max 32 (sub (sub $mib 64) (mul 3 $semi)) -}}
--max-semi-space-size={{ $semi }} --max-old-space-size={{ $old }}
{{- end -}}
{{- end -}}

{{- define "kruntimes.commonEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: KRT_LOG_LEVEL
  value: {{ .ctx.Values.logLevel | default .ctx.Values.global.logLevel | quote }}
{{- with include "kruntimes.nodeHeapOptions" (dig "limits" "memory" "" (.ctx.Values.resources | default dict)) }}
- name: NODE_OPTIONS
  value: {{ . | quote }}
{{- end }}
{{- with .ctx.Values.global.tracing.otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ ternary $.name (printf "kruntimes-%s" $.name) (hasPrefix "kruntimes-" $.name) | quote }}
{{- end }}
{{- end }}

{{- /* The leader-election flags shared by scheduler, controller-manager and stale-recovery. */ -}}
{{- define "kruntimes.leaderElectionArgs" -}}
- --lease-namespace={{ .ctx.Release.Namespace }}
- --lease-name={{ .name }}
- --lease-duration-seconds={{ .ctx.Values.leaderElection.leaseDurationSeconds }}
- --renew-deadline-seconds={{ .ctx.Values.leaderElection.renewDeadlineSeconds }}
- --retry-period-seconds={{ .ctx.Values.leaderElection.retryPeriodSeconds }}
{{- end }}

{{- /* Scheduling knobs of a Pod spec from the service's values. */ -}}
{{- define "kruntimes.podPlacement" -}}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.global.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- /* The Secret holding the internal CA (ca.crt + ca.key, or cert-manager's tls.crt + tls.key). */ -}}
{{- define "kruntimes.internalCASecret" -}}
{{- if .certManager.enabled -}}
kruntimes-internal-ca
{{- else -}}
{{ required "global.internalCA.existingSecret or global.internalCA.certManager.enabled is required" .existingSecret }}
{{- end -}}
{{- end }}

{{- /* ServiceAccount: (dict "ctx" . "name" NAME "component" C "automount" BOOL) */ -}}
{{- define "kruntimes.serviceAccount" -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .name }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "kruntimes.labels" . | nindent 4 }}
automountServiceAccountToken: {{ .automount }}
{{- end }}

{{- /*
RBAC from the generated rule sets in _rbac-rules.tpl: what the service does in the
namespaces it watches is a ClusterRole (every namespace) or, with global.watchNamespace, a
Role in that namespace only; its leader Lease is a Role `<name>-leader-election` in the
release namespace; rules on resources without a namespace (namespaces, SubjectAccessReviews)
are the ClusterRole `<name>-cluster-scoped` either way.
(dict "ctx" . "name" NAME "component" C "rules" "kruntimes.rules.scheduler")
*/ -}}
{{- define "kruntimes.rbac" -}}
{{- $cluster := include (printf "%s.cluster" .rules) . | trim -}}
{{- $namespaced := include (printf "%s.namespaced" .rules) . | trim -}}
{{- $clusterScoped := include (printf "%s.clusterScoped" .rules) . | trim -}}
{{- $watch := .ctx.Values.global.watchNamespace -}}
{{- if $cluster }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ not (empty $watch) | ternary "Role" "ClusterRole" }}
metadata:
  name: {{ .name }}
  {{- with $watch }}
  namespace: {{ . }}
  {{- end }}
  labels:
    {{- include "kruntimes.labels" . | nindent 4 }}
rules:
{{ $cluster }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ not (empty $watch) | ternary "RoleBinding" "ClusterRoleBinding" }}
metadata:
  name: {{ .name }}
  {{- with $watch }}
  namespace: {{ . }}
  {{- end }}
  labels:
    {{- include "kruntimes.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: {{ not (empty $watch) | ternary "Role" "ClusterRole" }}
  name: {{ .name }}
subjects:
  - kind: ServiceAccount
    name: {{ .name }}
    namespace: {{ .ctx.Release.Namespace }}
{{- end }}
{{- if $clusterScoped }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .name }}-cluster-scoped
  labels:
    {{- include "kruntimes.labels" . | nindent 4 }}
rules:
{{ $clusterScoped }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .name }}-cluster-scoped
  labels:
    {{- include "kruntimes.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ .name }}-cluster-scoped
subjects:
  - kind: ServiceAccount
    name: {{ .name }}
    namespace: {{ .ctx.Release.Namespace }}
{{- end }}
{{- if $namespaced }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .name }}-leader-election
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "kruntimes.labels" . | nindent 4 }}
rules:
{{ $namespaced }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .name }}-leader-election
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "kruntimes.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ .name }}-leader-election
subjects:
  - kind: ServiceAccount
    name: {{ .name }}
    namespace: {{ .ctx.Release.Namespace }}
{{- end }}
{{- end }}

{{- /* --namespace of a service when the release watches one namespace only. */ -}}
{{- define "kruntimes.watchArgs" -}}
{{- with .Values.global.watchNamespace }}
- --namespace={{ . }}
{{- end }}
{{- end }}

{{- /* PodDisruptionBudget: (dict "ctx" . "name" NAME "component" C) */ -}}
{{- define "kruntimes.pdb" -}}
{{- with .ctx.Values.podDisruptionBudget }}
{{- if .enabled }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $.name }}
  namespace: {{ $.ctx.Release.Namespace }}
  labels:
    {{- include "kruntimes.labels" $ | nindent 4 }}
spec:
  {{- if hasKey . "minAvailable" }}
  minAvailable: {{ .minAvailable }}
  {{- else }}
  maxUnavailable: {{ .maxUnavailable | default 1 }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "kruntimes.selectorLabels" $ | nindent 6 }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
The metrics Service and optional ServiceMonitor of a service: (dict "ctx" . "name" NAME "component" C
["honorLabels" true: its series carry their own namespace label, which must win over the target's])
*/ -}}
{{- define "kruntimes.metrics" -}}
{{- $global := .ctx.Values.global -}}
{{- if $global.metrics.enabled }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .name }}-metrics
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "kruntimes.labels" . | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- include "kruntimes.selectorLabels" . | nindent 4 }}
  ports:
    - name: metrics
      port: {{ $global.metrics.port }}
      targetPort: metrics
      protocol: TCP
{{- if $global.serviceMonitor.enabled }}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ .name }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "kruntimes.labels" . | nindent 4 }}
    {{- with $global.serviceMonitor.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "kruntimes.selectorLabels" . | nindent 6 }}
      app.kubernetes.io/component: {{ .component }}
  namespaceSelector:
    matchNames: [{{ .ctx.Release.Namespace | quote }}]
  endpoints:
    - port: metrics
      path: /metrics
      scheme: http
      interval: {{ $global.serviceMonitor.interval }}
      {{- if .honorLabels }}
      honorLabels: true
      {{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- /* Namespaces allowed by a NetworkPolicy rule, by their immutable kubernetes.io/metadata.name label. */ -}}
{{- /*
The labels of every Runtime Pod the controller-manager creates (its Runtime Pod template).
*/ -}}
{{- define "kruntimes.runtimePodLabels" -}}
app.kubernetes.io/component: runtime
app.kubernetes.io/managed-by: kruntimes-controller-manager
{{- end }}

{{- define "kruntimes.namespacePeer" -}}
- namespaceSelector:
    matchExpressions:
      - key: kubernetes.io/metadata.name
        operator: In
        values:
          {{- toYaml . | nindent 10 }}
{{- end }}

{{- /*
NetworkPolicy of a service that serves nothing but metrics: only the namespaces named in
global.networkPolicy.metricsNamespaces may scrape it; every other ingress is denied.
(dict "ctx" . "name" NAME "component" C)
*/ -}}
{{- /*
The container ports and kubelet probes of a leader-elected service (scheduler,
stale-recovery, controller-manager; ctx: the subchart's context): /healthz (liveness:
the process answers) and /readyz (readiness: a standby, or a leader whose informers
synced) on global.health.port, and the metrics port when metrics are on.
*/ -}}
{{- define "kruntimes.probedPorts" -}}
{{- $global := .Values.global -}}
ports:
  - name: health
    containerPort: {{ $global.health.port }}
    protocol: TCP
  {{- if $global.metrics.enabled }}
  - name: metrics
    containerPort: {{ $global.metrics.port }}
    protocol: TCP
  {{- end }}
livenessProbe:
  httpGet:
    path: /healthz
    port: health
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: health
  periodSeconds: 5
  timeoutSeconds: 5
  failureThreshold: 2
{{- end }}

{{- define "kruntimes.metricsOnlyNetworkPolicy" -}}
{{- $global := .ctx.Values.global -}}
{{- if $global.networkPolicy.enabled }}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ .name }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "kruntimes.labels" . | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "kruntimes.selectorLabels" . | nindent 6 }}
  policyTypes: [Ingress]
  {{- $metrics := and $global.metrics.enabled $global.networkPolicy.metricsNamespaces }}
  {{- if or $metrics $global.health.probeFrom }}
  ingress:
    {{- if $metrics }}
    - from:
        {{- include "kruntimes.namespacePeer" $global.networkPolicy.metricsNamespaces | nindent 8 }}
      ports:
        - port: metrics
          protocol: TCP
    {{- end }}
    {{- with $global.health.probeFrom }}
    # The kubelet's probes come from the node; most CNIs allow node-local traffic
    # whatever the policy, others need the node CIDRs here.
    - from:
        {{- toYaml . | nindent 8 }}
      ports:
        - port: health
          protocol: TCP
    {{- end }}
  {{- else }}
  ingress: []
  {{- end }}
{{- end }}
{{- end }}
