//go:build tools

// Pins the kube-router module whose network policy controller enforces NetworkPolicies
// on the real node (tools/real-node; built by build.sh --node).
package tools

import _ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
