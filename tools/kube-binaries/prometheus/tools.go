//go:build tools

// Pins the Prometheus module whose server scrapes the local cluster (krt dev up) and
// evaluates the chart's dashboard queries on real series.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
