//go:build tools

// Pins the runc module whose runc runs the real node's containers (tools/real-node; built
// by build.sh --node, with cgo and libseccomp). Debian bookworm's runc 1.1.5 cannot run a
// Pod with user namespaces (`hostUsers: false`): that needs idmapped mounts (runc >= 1.2).
package tools

import _ "github.com/opencontainers/runc"
