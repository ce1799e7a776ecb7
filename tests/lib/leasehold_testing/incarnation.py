"""Incarnation: one sidecar *process* of a chaos, soak or leak run (a slot = one API
client/token, an identity, a generation). A restarted replica is a new incarnation, so claims are
never attributed to the wrong process."""
from pathlib import Path

from .sidecar import Sidecar


def port_collision(inc):
    """The process could not listen (a test-infrastructure race, not a sidecar failure)."""
    return inc.proc is not None and inc.proc.returncode == 2 and \
        "Address already in use" in inc.logs()


def clock_rate_env(rate):
    """The environment that runs a sidecar's monotonic clock at `rate` x real time (the test
    hook, both variables: the rate alone is ignored); none for rate 1."""
    if rate == 1.0:
        return {}
    return {"LEASEHOLD_TEST_HOOKS": "1", "LEASEHOLD_TEST_CLOCK_RATE": f"{rate:g}"}


class Incarnated:
    """A chaos run's bookkeeping of one sidecar process, mixed into a Sidecar class ahead of
    it (Incarnation for the Kubernetes stores, etcd_env.EtcdIncarnation for etcd): the
    scenario, its samplers and its checks read only these, whatever the store."""

    def incarnate(self, slot, identity, gen, rate, client):
        self.slot, self.identity, self.gen, self.rate = slot, identity, gen, rate
        self.label = f"{identity}#{gen}"
        self.client = client          # the fault target: an API user, or the slot's proxies
        self.stopped = False          # SIGSTOPped by us right now
        self.ended_by = None          # "kill" / "term" / "teardown": we ended it
        self.term_sent_at = None      # when we sent SIGTERM
        self.samples = []             # (t_start, t_end, status dict | None | {"exited": rc})
        self.latest = None            # last successful status

    def start(self):
        """Starts the process without waiting for it to serve (the sampler copes)."""
        return super().start(wait=False)

    def kill(self, why=None):
        """kill -9, remembering that we ended it and why (the first reason counts)."""
        if self.alive():
            self.ended_by = self.ended_by or why
        super().kill()
        self.stopped = False

    def sampled_leader(self):
        """Whether its last answer to the sampler said leader (no request of its own)."""
        st = self.latest
        return bool(st and st.get("leader"))


class Incarnation(Incarnated, Sidecar):
    """One sidecar process, a Sidecar with a chaos run's bookkeeping. `slot` picks the API user
    (its own token: faults and counters can address it), `identity` is --identity, `gen` counts
    restarts of the slot; `rate` != 1 runs its monotonic clock that much fast or slow (the test
    hook). Its Sampler fills `samples` and `latest`."""

    def __init__(self, env, slot, identity, gen, lease, logdir, rate=1.0, extra_args=(),
                 timings=None):
        super().__init__(env, identity, extra_args=extra_args, user=f"replica-{slot}",
                         lease=lease, env_vars=clock_rate_env(rate), timings=timings,
                         log_path=Path(logdir) / f"{identity}.g{gen}.log")
        self.incarnate(slot, identity, gen, rate, env.client_name(f"replica-{slot}"))
