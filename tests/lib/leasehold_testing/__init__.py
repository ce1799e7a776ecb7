"""leasehold_testing: the Python test code every suite shares (integration, publish, drop-in,
chaos, soak, load, deploy, bench, the golden capture). Python standard library only, except
helm.py and chart_suite.py, which imports it (PyYAML). Found through
PYTHONPATH=<repository>/tests/lib: ctest sets it for every Python test
(LEASEHOLD_TESTS_PYTHONPATH in CMakeLists.txt); by hand, `export PYTHONPATH=$PWD/tests/lib` first.

What a scenario file needs is here at the top (`from leasehold_testing import Env, Observer,
check, ...`); the rest is imported from its module:

  timings          the scaled D, R, P and their flags; LEASEHOLD_TEST_SLOWDOWN stretches them
                   and slack(), the machine's part of a bound
  checks           log, Failure, check, check_took, wait_for, run_steps
  ports            free_port: the one port picker (below the ephemeral range)
  http_calls       http_get, http_request
  kube_time        epoch: a Kubernetes MicroTime as seconds
  sidecar          Sidecar: the one wrapper of a leasehold process (start, signals, kill,
                   reap, /leader, /metrics, logs); the_leader
  observer         Observer: every sidecar's /leader sampled, claims checked for overlap
  leader_sampler   LeaderClient, Sampler: the one /leader sampler (one thread per sidecar,
                   keep-alive or not; the Observer's, the chaos and soak runs', the bench's)
  shard_sampler    ShardObserver, wait_balanced, owners: shard mode's /shards sampled on
                   every replica (on the Sampler), double owners, tokens, balance
  shard_run_group  ShardRunGroup: `leasehold run --shards 8` replicas with the Monitor and the
                   ShardObserver, on Kubernetes (ShardRunReplica) or etcd (EtcdShardRunReplica)
  incarnation      Incarnation: a Sidecar with a chaos/soak run's bookkeeping (slot, identity,
                   generation, samples; the Incarnated mixin, also etcd_env's EtcdIncarnation)
  terms            the term and token checks of the chaos, soak and real runs (+ recheck)
  lease_history    LeaseHistory: every version of a Lease, from a watch; start_history,
                   stop_history, history_checks, wait_for_record (the history trails the server)
  image_build      build_image: the deploy tests' one image build (deploy.image, the node
                   tests, bench/node.py)
  quantities       parse_duration, memory_bytes, millicpu: the chart's values as numbers
  coordinated_history  the controller's decisions and the terms they start in a Lease's
                   history under --coordinated
  fenced_store     FencedStore, FencedWriter: the fenced SQLite writes of a chaos run
  proc             the one /proc sampler: footprint (RSS, threads, fds), CPU time, state
  wrk              the one wrk runner and its report as numbers
  metrics          /metrics (Prometheus text) as numbers
  event_stream     GET /leader/watch read as the main container reads it (SseClient)
  env              Env: the test API server with sidecars, faults through its control port
  real_env         RealEnv: the same interface on the real kube-apiserver
  fast_failover    --fast-failover without a kubelet: the chart values, Pod objects whose
                   container names itself, a sidecar's environment in one
  etcd_env         EtcdEnv, EtcdSidecar: a real etcd cluster of 1 or 3 members (TLS, client
                   certificates, auth, a least-privilege user) and `leasehold --store etcd`
                   sidecars; etcd's timings the bounds use (ETCD_EXPIRY_SCAN, ELECTION_TIMEOUT,
                   EXPIRY_TAKEOVER)
  zookeeper_env    ZooKeeperEnv, ZooKeeperSidecar, KazooElection: Debian's ZooKeeper 3.8.0 (1
                   or 3 members, a secureClientPort with tls=True), `leasehold --store
                   zookeeper` sidecars and kazoo's Election beside them; TICK, SERVER_LAG,
                   SESSION
  member_process   MemberProcess: a cluster member's process (alive, signal, kill -9)
  stores           Store: what the conformance suite (tests/conformance) asks of a store, and
                   the bounds that differ between stores; STORES by name
  control_plane    ControlPlane: the one wrapper of tests/realkube/start.sh
  tcp_proxy        TcpProxy: partitions, resets and latency for one client of a real server
  audit_log        AuditLog: kube-apiserver's audit log as events and counters
  kubeconfig       write_kubeconfig
  sidecar_host     SidecarHost: what Env and RealEnv share
  helm             Helm: real helm in a private home (PyYAML)
  oci_registry     OciRegistry: a local OCI registry (docker-registry) with TLS from a test CA
  chart_suite      the command line of the chart suites (tests/deploy): checks with helm,
                   steps on the real control plane
  scenario_runner  run_scenarios, real_options: the command line of every scenario file
  paths            ROOT: the repository
"""
from .audit_log import AuditLog
from .checks import Failure, check, check_took, log, run_steps, wait_for
from .control_plane import ControlPlane
from .env import Env
from .http_calls import http_get, http_request
from .kubeconfig import write_kubeconfig
from .observer import Observer
from .ports import free_port
from .real_env import RealEnv
from .scenario_runner import real_options, run_scenarios
from .sidecar import Sidecar, the_leader
from .tcp_proxy import TcpProxy
from .timings import TIMINGS, D, P, R

__all__ = ["AuditLog", "ControlPlane", "D", "Env", "Failure", "Observer", "P", "R", "RealEnv",
           "Sidecar", "TIMINGS", "TcpProxy", "check", "check_took", "free_port", "http_get",
           "http_request", "log", "real_options", "run_scenarios", "run_steps", "the_leader",
           "wait_for", "write_kubeconfig"]
