//go:build tools

// Pins the Jaeger module whose all-in-one (collector + query, in-memory storage) receives
// the services' OTLP spans in the tracing integration test.
package tools

import _ "github.com/jaegertracing/jaeger/cmd/all-in-one"
