{{/* The value of app.kubernetes.io/name. */}}
{{- define "kube-combo.name" -}}
{{- default "kube-combo" .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Deployment's name, and the prefix of the cluster-wide objects. */}}
{{- define "kube-combo.fullname" -}}
{{- default "combo-operator" .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kube-combo.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Deployment's selector: the labels of the kustomize install, so an
upgrade from an earlier chart keeps its (immutable) selector. */}}
{{- define "kube-combo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kube-combo.name" . }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "kube-combo.labels" -}}
{{ include "kube-combo.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "kube-combo.chart" . }}
{{- end }}

{{- define "kube-combo.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kube-combo.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* An image of .Values.image: repository@digest, or repository:tag. */}}
{{- define "kube-combo.image" -}}
{{- if .digest }}
{{- printf "%s@%s" .repository .digest }}
{{- else }}
{{- printf "%s:%s" .repository .tag }}
{{- end }}
{{- end }}
