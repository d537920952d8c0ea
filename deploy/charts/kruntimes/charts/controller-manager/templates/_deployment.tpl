{{- /*
The controller-manager's Deployment: (dict "ctx" <this subchart's context> "gateway" (dict
["host" HOST[:PORT]] ["caSecret" SECRET])). Included by the kruntimes chart, which alone sees
the gateway's values: runtime Pods get --gateway-host as KRT_GATEWAY_HOST, and the ca.crt of
the gateway's TLS Secret (--gateway-ca-file) as gateway-ca.crt of their runtimed TLS Secret.
*/ -}}
{{- define "kruntimes.controllerManager.deployment" -}}
{{- $gateway := .gateway -}}
{{- with .ctx -}}
{{- $s := dict "ctx" . "name" "kruntimes-controller-manager" "component" "controller-manager" -}}
{{- $ca := .Values.global.internalCA -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: kruntimes-controller-manager
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "kruntimes.labels" $s | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      {{- include "kruntimes.selectorLabels" $s | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "kruntimes.labels" $s | nindent 8 }}
      {{- with .Values.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: kruntimes-controller-manager
      securityContext:
        {{- include "kruntimes.podSecurityContext" . | nindent 8 }}
      {{- with include "kruntimes.podPlacement" . | trim }}
      {{- . | nindent 6 }}
      {{- end }}
      containers:
        - name: controller-manager
          image: {{ include "kruntimes.image" (dict "image" .Values.image "global" .Values.global "appVersion" .Chart.AppVersion) }}
          imagePullPolicy: {{ .Values.image.pullPolicy | default .Values.global.image.pullPolicy }}
          args:
            {{- include "kruntimes.leaderElectionArgs" $s | nindent 12 }}
            - --runtimed-image={{ include "kruntimes.image" (dict "image" .Values.runtimeImages.runtimed "global" .Values.global "appVersion" .Chart.AppVersion) }}
            - --python-image={{ include "kruntimes.image" (dict "image" .Values.runtimeImages.python "global" .Values.global "appVersion" .Chart.AppVersion) }}
            - --bash-image={{ include "kruntimes.image" (dict "image" .Values.runtimeImages.bash "global" .Values.global "appVersion" .Chart.AppVersion) }}
            - --runtime-service-account={{ .Values.runtimeServiceAccount }}
            - --finished-runs-per-runtime={{ .Values.finishedRunsPerRuntime }}
            - --internal-ca-dir=/var/run/kruntimes/internal-ca
            {{- include "kruntimes.watchArgs" . | nindent 12 }}
            - --health-address=:{{ .Values.global.health.port }}
            {{- if .Values.global.metrics.enabled }}
            - --metrics-address=:{{ .Values.global.metrics.port }}
            {{- end }}
            {{- with $gateway.host }}
            - --gateway-host={{ . }}
            {{- end }}
            {{- if $gateway.caSecret }}
            - --gateway-ca-file=/var/run/kruntimes/gateway-ca/ca.crt
            {{- end }}
            {{- with .Values.global.tracing.otlpEndpoint }}
            - --runtime-otlp-endpoint={{ . }}
            {{- end }}
            - --automatic-retry={{ .Values.global.automaticRetry }}
            - --user-namespaces={{ .Values.runtimeUserNamespaces }}
            {{- with .Values.runtimedResources }}
            {{- with dig "requests" "cpu" "" . }}
            - --runtimed-cpu-request={{ . }}
            {{- end }}
            {{- with dig "requests" "memory" "" . }}
            - --runtimed-memory-request={{ . }}
            {{- end }}
            {{- with dig "limits" "memory" "" . }}
            - --runtimed-memory-limit={{ . }}
            {{- end }}
            {{- end }}
          env:
            {{- include "kruntimes.commonEnv" $s | nindent 12 }}
          {{- include "kruntimes.probedPorts" . | nindent 10 }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
          securityContext:
            {{- include "kruntimes.containerSecurityContext" . | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            - name: internal-ca
              mountPath: /var/run/kruntimes/internal-ca
              readOnly: true
            {{- if $gateway.caSecret }}
            - name: gateway-ca
              mountPath: /var/run/kruntimes/gateway-ca
              readOnly: true
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
        # The only Pod that holds the CA key: it issues each Runtime's <runtime>-runtimed-tls Secret.
        - name: internal-ca
          secret:
            secretName: {{ include "kruntimes.internalCASecret" $ca }}
            defaultMode: 0440
            items:
              {{- if $ca.certManager.enabled }}
              # cert-manager names a self-signed CA's certificate and key tls.crt and tls.key.
              - { key: tls.crt, path: ca.crt }
              - { key: tls.key, path: ca.key }
              {{- else }}
              - { key: ca.crt, path: ca.crt }
              - { key: ca.key, path: ca.key }
              {{- end }}
        {{- with $gateway.caSecret }}
        # Only the gateway TLS Secret's ca.crt, never its key: copied into each Runtime's
        # runtimed TLS Secret and published as caBundle in Run endpoints.
        - name: gateway-ca
          secret:
            secretName: {{ . }}
            defaultMode: 0440
            items:
              - { key: ca.crt, path: ca.crt }
        {{- end }}
{{- end }}
{{- end }}
