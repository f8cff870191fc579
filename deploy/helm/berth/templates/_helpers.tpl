{{/* The objects' base name: the release name when it already contains the chart's name. */}}
{{- define "berth.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "berth.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* What the Deployment selects its pods by (and the anti-affinity, the PDB, the Service). */}}
{{- define "berth.selectorLabels" -}}
app.kubernetes.io/name: {{ include "berth.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "berth.labels" -}}
{{ include "berth.selectorLabels" . }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "berth.leaseNamespace" -}}
{{- .Values.leaderElection.resourceNamespace | default .Release.Namespace -}}
{{- end -}}

{{/* Where the policy ConfigMap is mounted; its plugins sit beside policy.json. */}}
{{- define "berth.policyDir" -}}/etc/berth{{- end -}}

{{/* The plugins directory --plugins names, when the modules come from an image. */}}
{{- define "berth.imagePluginsDir" -}}
{{- $image := .Values.plugins.image -}}
{{- if eq $image.mode "imageVolume" -}}
{{- printf "/var/lib/berth/plugin-image/%s" (trimPrefix "/" $image.path) | trimSuffix "/" -}}
{{- else -}}
/var/lib/berth/plugins
{{- end -}}
{{- end -}}

{{/* Rejects values that would deploy something broken, naming what is accepted. */}}
{{- define "berth.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) -}}
{{- fail (printf "replicas is %d but leaderElection.enabled is false: replicas would bind the same pods; enable leader election or set replicas: 1" (int .Values.replicas)) -}}
{{- end -}}
{{- $image := .Values.plugins.image -}}
{{- if not (has $image.mode (list "imageVolume" "initContainer")) -}}
{{- fail (printf "plugins.image.mode is %q; accepted: imageVolume (Kubernetes 1.31+), initContainer" $image.mode) -}}
{{- end -}}
{{- if and $image.reference .Values.plugins.configMap -}}
{{- fail "plugins.configMap and plugins.image.reference are both set: Berth reads one plugins directory; put every module in the image, or every module in the ConfigMap" -}}
{{- end -}}
{{- if not (hasPrefix "/" (toString $image.path)) -}}
{{- fail (printf "plugins.image.path is %q; it must be an absolute directory inside the image, e.g. /plugins" (toString $image.path)) -}}
{{- end -}}
{{- range $name, $module := .Values.plugins.configMap -}}
{{- if not (hasSuffix ".wasm" $name) -}}
{{- fail (printf "plugins.configMap key %q: plugin file names end in .wasm" $name) -}}
{{- end -}}
{{- if not (regexMatch "^[A-Za-z0-9+/]+={0,2}$" (toString $module)) -}}
{{- fail (printf "plugins.configMap.%s is not base64 (encode the module, e.g. base64 -w0 %s)" $name $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
