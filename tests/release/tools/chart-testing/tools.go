//go:build tools

// Package tools pins the programs tests/release/tools/build.sh builds; nothing imports it.
package tools

import (
	_ "github.com/helm/chart-testing/v3/ct"
)
