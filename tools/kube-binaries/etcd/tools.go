//go:build tools

// Package tools pins the etcd server command built by ../build.sh. It is a
// module of its own because etcd's dependency graph conflicts with Kubernetes'.
package tools

import _ "go.etcd.io/etcd/server/v3"
