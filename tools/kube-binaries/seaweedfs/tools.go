//go:build tools

// Pins the SeaweedFS module whose `weed` binary serves the S3-compatible object store
// for artifact tests and the local cluster.
package tools

import _ "github.com/seaweedfs/seaweedfs/weed"
