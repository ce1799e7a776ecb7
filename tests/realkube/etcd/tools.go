//go:build tools

// Package tools pins the etcd server tests/realkube/build.sh builds; nothing imports it.
package tools

import _ "go.etcd.io/etcd/server/v3"
