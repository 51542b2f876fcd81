// Package monitoring tests the Grafana dashboard and the PrometheusRules of the sluice chart
// against the metrics the controllers really export.
//
// It is a module of its own, outside go.work, because it parses every expression with the
// Prometheus PromQL parser (github.com/prometheus/prometheus/promql/parser): the prometheus
// module requires newer versions of many shared libraries (prometheus/common, OpenTelemetry,
// gRPC), which in the workspace would move every controller's build to them. Here they stay in
// this test. Run it with `make monitoring` (part of `make test`); it needs `make build`.
package monitoring
