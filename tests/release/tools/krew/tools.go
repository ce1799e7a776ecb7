//go:build tools

// Package tools pins the programs tests/release/tools/build.sh builds; nothing imports it.
package tools

import (
	_ "sigs.k8s.io/krew/cmd/krew"
	_ "sigs.k8s.io/krew/cmd/validate-krew-manifest"
)
