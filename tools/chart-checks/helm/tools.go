//go:build tools

// Package tools pins the helm command built by ../scripts/build-helm.sh. It is a
// module of its own so that helm's dependency graph is resolved on its own.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
