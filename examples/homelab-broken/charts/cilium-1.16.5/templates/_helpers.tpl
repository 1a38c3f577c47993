{{/*
Trimmed example chart: the real chart's templates are not vendored here; fluxgate reads only
Chart.yaml and values.yaml (chart defaults) from the chart cache.
*/}}
{{- define "cilium.chart" -}}
{{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
