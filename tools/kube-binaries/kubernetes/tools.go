//go:build tools

// Package tools pins the upstream control-plane commands that the test harness
// and the local cluster build from source (see build.sh).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
