{{- define "edge-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "edge-operator.fullname" -}}
{{- if .Values.fullnameOverride }}{{ .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}{{- $name := include "edge-operator.name" . }}
{{- if contains $name .Release.Name }}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{ else }}{{ printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}{{ end }}
{{- end }}
{{- end }}

{{- define "edge-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}{{ default (include "edge-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}{{ required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}{{ end }}
{{- end }}

{{- define "edge-operator.labels" -}}
app.kubernetes.io/name: {{ include "edge-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "edge-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "edge-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "edge-operator.secretName" -}}
{{- if .Values.api.existingSecret }}{{ .Values.api.existingSecret }}{{ else }}{{ include "edge-operator.fullname" . }}-api{{ end }}
{{- end }}

{{/* The operator's permissions on its own kinds: the same rules for a ClusterRole or a Role. The kinds are _kinds.tpl's, generated from the bindings. */}}
{{- define "edge-operator.kindRules" -}}
# every write of the operator's is a PATCH: no update (a PUT of a whole object it read)
- apiGroups: [edge.tunnel.dev]
  resources: {{ include "edge-operator.kinds.namespaced" . }}
  verbs: [get, list, watch, patch]
- apiGroups: [edge.tunnel.dev]
  resources: {{ include "edge-operator.kinds.namespaced.status" . }}
  verbs: [get, patch]
- apiGroups: [edge.tunnel.dev]
  resources: {{ include "edge-operator.kinds.namespaced.finalizers" . }}
  verbs: [update]
# Secrets: list and watch carry metadata only (the operator asks for PartialObjectMetadata),
# get reads a Secret that an object references by secretKeyRef. Kubernetes RBAC cannot narrow
# list/watch by name; use watchNamespaces to narrow them by namespace. patch: the operator's
# finalizer on an EdgeAccount's key Secret while objects need the key to delete their remote
# resources (a namespace's deletion removes the Secret with them); the chart's admission
# policy lets the operator change nothing else of a Secret.
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list, watch, patch]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
{{- end }}

{{/*
The V8 heap limit in MiB: heapPercentOfLimit of resources.limits.memory (Ki, Mi, Gi, k, M, G or
bytes), or nothing without a limit. Node's own default follows the host's or the cgroup's whole
memory, so the heap would grow into the pod's limit before collecting: this keeps RSS near the
live data and leaves room for buffers and code (the Node analogue of Go's GOMEMLIMIT).
*/}}
{{- define "edge-operator.heapMiB" -}}
{{- $m := toString (dig "limits" "memory" "" .Values.resources) -}}
{{- $mib := 0 -}}
{{- if hasSuffix "Gi" $m }}{{ $mib = mul (trimSuffix "Gi" $m | int64) 1024 }}
{{- else if hasSuffix "Mi" $m }}{{ $mib = trimSuffix "Mi" $m | int64 }}
{{- else if hasSuffix "Ki" $m }}{{ $mib = div (trimSuffix "Ki" $m | int64) 1024 }}
{{- else if hasSuffix "G" $m }}{{ $mib = div (mul (trimSuffix "G" $m | int64) 1000000000) 1048576 }}
{{- else if hasSuffix "M" $m }}{{ $mib = div (mul (trimSuffix "M" $m | int64) 1000000) 1048576 }}
{{- else if hasSuffix "k" $m }}{{ $mib = div (mul (trimSuffix "k" $m | int64) 1000) 1048576 }}
{{- else if regexMatch "^[0-9]+$" $m }}{{ $mib = div ($m | int64) 1048576 }}{{ end -}}
{{- if gt (int64 $mib) 0 }}{{ div (mul $mib .Values.heapPercentOfLimit) 100 }}{{ end -}}
{{- end }}
