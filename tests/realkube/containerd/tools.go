//go:build tools

// Package tools pins the container runtime the node of tests/realkube runs (build.sh --node):
// containerd with its CRI plugin, its runc shim and ctr; nothing imports it.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
