//go:build tools

// Pins the CoreDNS module whose coredns serves the real node's cluster DNS
// (tools/real-node; built by build.sh --node).
package tools

import _ "github.com/coredns/coredns"
