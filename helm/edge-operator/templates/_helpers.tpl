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

{{/* The operator's permissions on its own kinds: the same rules for a ClusterRole or a Role. */}}
{{- define "edge-operator.kindRules" -}}
- apiGroups: [edge.tunnel.dev]
  resources: [ippolicies, ippolicyrules, iprestrictions, tunnelgroupbackends, weightedbackends, sshcredentials, httpsedges, httpsedgeroutes, tcpedges, tlsedges]
  verbs: [get, list, watch, patch, update]
- apiGroups: [edge.tunnel.dev]
  resources: [ippolicies/status, ippolicyrules/status, iprestrictions/status, tunnelgroupbackends/status, weightedbackends/status, sshcredentials/status, httpsedges/status, httpsedgeroutes/status, tcpedges/status, tlsedges/status]
  verbs: [get, patch, update]
- apiGroups: [edge.tunnel.dev]
  resources: [ippolicies/finalizers, ippolicyrules/finalizers, iprestrictions/finalizers, tunnelgroupbackends/finalizers, weightedbackends/finalizers, sshcredentials/finalizers, httpsedges/finalizers, httpsedgeroutes/finalizers, tcpedges/finalizers, tlsedges/finalizers]
  verbs: [update]
# Secrets: list and watch carry metadata only (the operator asks for PartialObjectMetadata),
# get reads a Secret that an object references by secretKeyRef. Kubernetes RBAC cannot narrow
# list/watch by name; use watchNamespaces to narrow them by namespace.
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
{{- end }}
