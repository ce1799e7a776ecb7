// The bench's etcd baseline (bench/run --only etcd): etcd's own election, client/v3/concurrency
// at the version of tests/realkube/etcd's server (go.etcd.io/etcd/client/v3 v3.6.16), used as a
// careful Go service would: a session (a lease of TTL -ttl seconds, kept alive by the client),
// Election.Campaign, and on SIGTERM Resign, then the session closed (its lease revoked). One JSON
// line on stdout for each change, with the wall time it happened; built by build.sh.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

func say(msg string, fields map[string]any) {
	// Microseconds, as leasehold's log has them.
	line := map[string]any{"ts": time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"), "msg": msg}
	for k, v := range fields {
		line[k] = v
	}
	b, _ := json.Marshal(line)
	fmt.Println(string(b))
}

func main() {
	endpoints := flag.String("endpoints", "http://127.0.0.1:2379", "etcd endpoints, comma-separated")
	name := flag.String("name", "demo", "the election's name (key prefix NAME/)")
	identity := flag.String("identity", "", "this candidate's value")
	ttl := flag.Int("ttl", 2, "the session's lease TTL in seconds")
	flag.Parse()
	if *identity == "" {
		fmt.Fprintln(os.Stderr, "etcd-election: -identity is required")
		os.Exit(2)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(*endpoints, ","),
		DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd-election:", err)
		os.Exit(1)
	}
	defer cli.Close()
	session, err := concurrency.NewSession(cli, concurrency.WithTTL(*ttl))
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd-election: session:", err)
		os.Exit(1)
	}
	election := concurrency.NewElection(session, *name)
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		cancel()
	}()
	lease := fmt.Sprintf("%x", session.Lease())
	say("campaigning", map[string]any{"identity": *identity, "lease": lease})
	if err := election.Campaign(ctx, *identity); err != nil {
		session.Close()
		say("stopped", map[string]any{"error": err.Error()})
		return
	}
	say("became leader", map[string]any{"identity": *identity, "token": election.Rev()})
	select {
	case <-ctx.Done():
		_ = election.Resign(context.Background())
		session.Close()
		say("released", nil)
	case <-session.Done():
		say("session expired", nil)
		os.Exit(1)
	}
}
