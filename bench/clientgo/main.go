// clientgo-elector: the bench's client-go baseline. A minimal leader-election process written
// the way client-go's documentation shows it (k8s.io/client-go/tools/leaderelection with a
// LeaseLock, ReleaseOnCancel), with leasehold's flags where they overlap and a GET /leader
// answer shaped like leasehold's, so bench/run can measure both on the same API server with the
// same probes. It is a measuring instrument, not a product: no probes, events or pod labels.
//
//	clientgo-elector --lease-name NAME [--lease-namespace NS] [--identity ID] [--kubeconfig PATH]
//	    [--lease-duration 15s --renew-deadline 10s --retry-period 2s] [--http-address 127.0.0.1:4040]
//
// SIGTERM or SIGINT cancels the election's context: client-go then releases the Lease
// (ReleaseOnCancel: holder "", leaseDurationSeconds 1) and the process exits 0.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// recordingLock is client-go's LeaseLock plus a copy of the last record it read or wrote.
// client-go keeps its observed record private; /leader needs the holder's leaseTransitions
// (leasehold's fencingToken), and reading it here costs no extra API request.
type recordingLock struct {
	resourcelock.Interface
	mu   sync.Mutex
	last resourcelock.LeaderElectionRecord
	seen bool
}

func (l *recordingLock) remember(r resourcelock.LeaderElectionRecord) {
	l.mu.Lock()
	l.last, l.seen = r, true
	l.mu.Unlock()
}

func (l *recordingLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, raw, err := l.Interface.Get(ctx)
	if err == nil && r != nil {
		l.remember(*r)
	}
	return r, raw, err
}

func (l *recordingLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	if err == nil {
		l.remember(r)
	}
	return err
}

func (l *recordingLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, r)
	if err == nil {
		l.remember(r)
	}
	return err
}

func (l *recordingLock) record() (resourcelock.LeaderElectionRecord, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.seen
}

type status struct {
	Leader       bool   `json:"leader"`
	Identity     string `json:"identity"`
	Holder       string `json:"holder"`
	FencingToken int    `json:"fencingToken"`
	Namespace    string `json:"namespace"`
	Lease        string `json:"lease"`
	AcquireTime  string `json:"acquireTime,omitempty"`
	RenewTime    string `json:"renewTime,omitempty"`
}

func defaultIdentity() string {
	host := os.Getenv("POD_NAME")
	if host == "" {
		host, _ = os.Hostname()
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "_" + hex.EncodeToString(b)
}

func main() {
	fs := flag.NewFlagSet("clientgo-elector", flag.ContinueOnError)
	name := fs.String("lease-name", "", "name of the Lease (required)")
	ns := fs.String("lease-namespace", "default", "namespace of the Lease")
	identity := fs.String("identity", "", "holder identity (default $POD_NAME or the hostname, plus _ and 8 hex digits)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default $KUBECONFIG, in-cluster, ~/.kube/config)")
	leaseDuration := fs.Duration("lease-duration", 15*time.Second, "lease duration D")
	renewDeadline := fs.Duration("renew-deadline", 10*time.Second, "renew deadline R")
	retryPeriod := fs.Duration("retry-period", 2*time.Second, "retry period P")
	httpAddress := fs.String("http-address", "127.0.0.1:4040", "where GET /leader answers")
	klog.InitFlags(fs) // -v etc.: client-go's own logging
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *name == "" {
		fmt.Fprintln(os.Stderr, "clientgo-elector: --lease-name is required")
		os.Exit(2)
	}
	if *identity == "" {
		*identity = defaultIdentity()
	}

	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	loading.ExplicitPath = *kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, nil).ClientConfig()
	if err != nil {
		fmt.Fprintf(os.Stderr, "clientgo-elector: cluster access: %v\n", err)
		os.Exit(2)
	}
	cfg.UserAgent = "leasehold-bench-clientgo"
	// NewFromKubeconfig is client-go's own helper: request timeout max(1s, R/2).
	base, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, *ns, *name,
		resourcelock.ResourceLockConfig{Identity: *identity}, cfg, *renewDeadline)
	if err != nil {
		fmt.Fprintf(os.Stderr, "clientgo-elector: lock: %v\n", err)
		os.Exit(2)
	}
	lock := &recordingLock{Interface: base}

	// Leading is what the callbacks say: client-go calls OnStartedLeading once acquired and
	// OnStoppedLeading when renewals stopped succeeding for R or the context was cancelled.
	var leading atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lec := leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   *leaseDuration,
		RenewDeadline:   *renewDeadline,
		RetryPeriod:     *retryPeriod,
		ReleaseOnCancel: true,
		Name:            *name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				leading.Store(true)
				klog.InfoS("became leader", "identity", *identity)
			},
			OnStoppedLeading: func() {
				if leading.Swap(false) {
					klog.InfoS("stopped leading", "identity", *identity)
				}
			},
			OnNewLeader: func(holder string) { klog.InfoS("new leader observed", "holder", holder) },
		},
	}
	elector, err := leaderelection.NewLeaderElector(lec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "clientgo-elector: %v\n", err)
		os.Exit(2)
	}
	var current atomic.Pointer[leaderelection.LeaderElector]
	current.Store(elector)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /leader", func(w http.ResponseWriter, _ *http.Request) {
		le := current.Load()
		// After SIGTERM the work's context (OnStartedLeading's, a child of ctx) is cancelled at
		// once, while client-go still holds the Lease until its release below: the app leads no
		// more from the signal on.
		st := status{Leader: leading.Load() && le.IsLeader() && ctx.Err() == nil, Identity: *identity,
			Holder: le.GetLeader(), Namespace: *ns, Lease: *name}
		if r, ok := lock.record(); ok {
			st.FencingToken = r.LeaderTransitions
			if !r.AcquireTime.IsZero() {
				st.AcquireTime = r.AcquireTime.UTC().Format("2006-01-02T15:04:05.000000Z")
			}
			if !r.RenewTime.IsZero() {
				st.RenewTime = r.RenewTime.UTC().Format("2006-01-02T15:04:05.000000Z")
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})
	ln, err := net.Listen("tcp", *httpAddress)
	if err != nil {
		fmt.Fprintf(os.Stderr, "clientgo-elector: cannot listen on %s: %v\n", *httpAddress, err)
		os.Exit(2)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "http server")
		}
	}()

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		klog.InfoS("signal: releasing the lease")
		cancel()
		<-sigs
		os.Exit(1) // a second signal: exit at once
	}()

	// Run returns when the context is cancelled (after the release) or when leadership was
	// lost; like a sidecar, a replica that lost leadership competes again.
	for {
		elector.Run(ctx)
		if ctx.Err() != nil {
			break
		}
		elector, err = leaderelection.NewLeaderElector(lec)
		if err != nil {
			fmt.Fprintf(os.Stderr, "clientgo-elector: %v\n", err)
			os.Exit(1)
		}
		current.Store(elector)
	}
	shutdown, done := context.WithTimeout(context.Background(), time.Second)
	defer done()
	_ = srv.Shutdown(shutdown)
	klog.Flush()
}
