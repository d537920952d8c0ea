//go:build tools

// Pins the containerd module whose containerd, containerd-shim-runc-v2 and ctr run the
// real node's containers (tools/real-node; built by build.sh --node).
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
