// The monitoring.coreos.com CRDs (PodMonitor, ServiceMonitor, PrometheusRule, ...) for the
// chart's Prometheus Operator objects, as the prometheus-operator module ships them in
// example/prometheus-operator-crd. Nothing is built or imported: ../build.sh downloads this
// exact version (go.sum pins its hash) and copies the YAML files. Not `go mod tidy`-able for
// that reason (tidy drops a requirement no package imports).
module leasehold.test/realkube/promcrds

go 1.26.0

require github.com/prometheus-operator/prometheus-operator v0.85.0
