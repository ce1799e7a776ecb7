"""The store conformance suite's fixture: `store`, one leasehold_testing.stores.Store per store
named by --store (default: kubernetes and etcd), so that each scenario of this directory runs
once per store, its pytest id `test_NAME[STORE]`.

    PYTHONPATH=tests/lib /usr/bin/python3 -m pytest -p no:cacheprovider -s \\
        'tests/conformance/test_election.py::test_kill9[etcd]' --store etcd

The binaries default to the release build's and build/realkube/bin/etcd ($ETCD_BIN replaces
either etcd, $ETCDCTL_BIN etcdctl, as in etcd_scenarios.py); --sidecar, --apiserver, --etcd,
--etcd34 and --etcdctl replace them. A scenario marked `@pytest.mark.members(3)` gets a store
cluster of three members (etcd); a store without members skips it.

Each scenario logs `=== NAME[STORE]: its doc's first line`, then `PASS NAME[STORE] (Ns)` or
`FAIL NAME[STORE]: ...` (with the machine stalls that overlapped it, machine_stalls), as the
scenario files' runner does; a failed scenario's store prints its logs' tails and keeps its
directory ($LEASEHOLD_TEST_KEEP)."""
import time

import pytest

from leasehold_testing import log, machine_stalls
from leasehold_testing.stores import DEFAULT_STORES, STORES, Binaries


def pytest_addoption(parser):
    defaults = Binaries()
    group = parser.getgroup("leasehold", "the leasehold store conformance suite")
    group.addoption("--store", action="append", choices=sorted(STORES),
                    help=f"a store to run every scenario on (repeatable; default "
                    f"{' and '.join(DEFAULT_STORES)})")
    group.addoption("--sidecar", default=defaults.sidecar, help="the leasehold binary")
    group.addoption("--apiserver", default=defaults.apiserver, help="the test API server")
    group.addoption("--etcd", default=defaults.etcd, help="etcd for the etcd store "
                    "($ETCD_BIN wins)")
    group.addoption("--etcd34", default=defaults.etcd34, help="Debian's etcd 3.4 for the "
                    "etcd34 store ($ETCD_BIN wins)")
    group.addoption("--etcdctl", default=defaults.etcdctl, help="etcdctl ($ETCDCTL_BIN wins)")


def pytest_configure(config):
    config.addinivalue_line("markers", "members(n): the store's cluster has n members (etcd); "
                            "a store without members skips the scenario")


def pytest_generate_tests(metafunc):
    if "store" in metafunc.fixturenames:
        names = metafunc.config.getoption("store") or DEFAULT_STORES
        metafunc.parametrize("store", list(dict.fromkeys(names)), indirect=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)
    if report.when == "call":
        if report.passed:
            log(f"PASS {item.name} ({call.stop - call.start:.1f}s)")
        elif report.failed:
            # At the start of its line (no timestamp): scripts/test-report.py's verdict lines.
            e = call.excinfo.value if call.excinfo else None
            print(f"\nFAIL {item.name}: {type(e).__name__}: {e}"
                  f"{machine_stalls.describe(call.start, call.stop)}", flush=True)


@pytest.fixture
def store(request):
    """The store request.param names, entered for one scenario and left after it (its logs'
    tails printed and its directory kept when the scenario failed)."""
    opt = request.config.getoption
    binaries = Binaries(sidecar=opt("sidecar"), apiserver=opt("apiserver"), etcd=opt("etcd"),
                        etcd34=opt("etcd34"), etcdctl=opt("etcdctl"))
    marker = request.node.get_closest_marker("members")
    members = marker.args[0] if marker else None
    kind = STORES[request.param]
    if members and not kind.has_members:
        pytest.skip(f"{kind.name} has no cluster of members")
    doc = (request.function.__doc__ or "").strip().splitlines()
    log(f"=== {request.node.name}: {doc[0] if doc else ''}")
    scenario = request.function.__name__.removeprefix("test_")
    s = kind(binaries, members=members, scenario=scenario).__enter__()
    started = time.time()
    try:
        yield s
    finally:
        call = getattr(request.node, "report_call", None)
        failed = call is None or call.failed
        if failed:
            log(f"{request.node.name} failed {time.time() - started:.1f}s after its store was up: "
                "the store's logs follow, its directory is kept ($LEASEHOLD_TEST_KEEP)")
        s.__exit__(Exception if failed else None, None, None)
