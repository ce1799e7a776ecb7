"""pytest fixtures of the ZooKeeper store's own scenarios (test_zookeeper_store.py): a real
ZooKeeper ensemble of Debian's 3.8.0 on loopback (leasehold_testing.zookeeper_env), one member
or three, and the sidecar binary (LEASEHOLD_BIN, as ctest sets it: tests/zookeeper/
CMakeLists.txt). A failed test prints the members' and sidecars' log tails and keeps the env's
directory (LEASEHOLD_TEST_KEEP), as every other suite does."""
import os

import pytest

from leasehold_testing.zookeeper_env import ZooKeeperEnv, available


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "report_" + report.when, report)


def ensemble(request, members, tls=False):
    why = available()
    if why:
        pytest.fail(f"ZooKeeper is not installed here: {why}")
    binary = os.environ.get("LEASEHOLD_BIN")
    if not binary:
        pytest.fail("LEASEHOLD_BIN names no leasehold binary (ctest sets it)")
    env = ZooKeeperEnv(binary, lease=request.node.name.split("[")[0], members=members, tls=tls)
    env.__enter__()
    yield env
    report = getattr(request.node, "report_call", None)
    env.close(failed=report is None or report.failed)


@pytest.fixture
def zk(request):
    """One member."""
    yield from ensemble(request, 1)


@pytest.fixture
def zk3(request):
    """Three members."""
    yield from ensemble(request, 3)


@pytest.fixture
def zk_tls(request):
    """One member with a secureClientPort (Netty, a certificate of the env's CA for
    127.0.0.1) beside its plain port."""
    yield from ensemble(request, 1, tls=True)
