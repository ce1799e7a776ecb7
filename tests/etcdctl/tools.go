//go:build tools

// etcdctl for the etcd store's scenarios (tests/integration/etcd_scenarios.py: `etcdctl elect`
// candidates beside leasehold's on one election). Built by build.sh.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
)
