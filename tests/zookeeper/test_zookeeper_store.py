"""The ZooKeeper store's own scenarios (`leasehold --store zookeeper`) on real ZooKeeper 3.8.0
(Debian's, leasehold_testing.zookeeper_env): kazoo's layout seen through kazoo, kazoo's Election
and leasehold's candidates taking turns on one path, a session expired under SIGSTOP, a member
killed under the leader's session, the quorum lost, bad input, and shard mode (--shards 8: the
group /<lease>, its members and each shard's election in kazoo's layout; a member killed under
a replica's one session moves no shard). What every store does (the
first leader, kill -9, SIGTERM, SIGSTOP, partition) is the conformance suite's.

    LEASEHOLD_BIN=build/release/sidecar/leasehold PYTHONPATH=tests/lib \\
        /usr/bin/python3 -m pytest tests/zookeeper -k kazoo

Every bound derives from D, R, P, slack() and the ensemble's TICK and SERVER_LAG."""
import os
import signal
import subprocess
import time

from leasehold_testing import D, P, R, Observer, check, log, the_leader, wait_for
from leasehold_testing.ports import free_port
from leasehold_testing.shard_sampler import (ShardObserver, balance_problem, shards_of,
                                             wait_balanced)
from leasehold_testing.shard_sampler import owners as shard_owners
from leasehold_testing.timings import slack
from leasehold_testing.zookeeper_env import SERVER_LAG, SESSION, TICK

# A session, a create and a read of the children: a few round trips.
FIRST_LEADER = slack(5)
# The servers expire a session SESSION after they last heard of it, rounded up to their next
# tick (ZooKeeper's ExpiryQueue); the deletion's watch event and one read follow.
EXPIRY_TAKEOVER = SESSION + TICK + P + slack(1)


def start(env, n=3, **kw):
    sidecars = []
    for i in range(n):
        # One at a time, so that the queue's order is the start order.
        sidecars.append(env.sidecar(f"replica-{i}", **kw).start())
        wait_for(f"replica-{i}'s node", lambda: len(env.contenders()) == i + 1, FIRST_LEADER)
    t0 = time.monotonic()
    leader = the_leader(sidecars, timeout=FIRST_LEADER)
    log(f"leader {leader.name} after {time.monotonic() - t0:.2f}s")
    return sidecars, leader


def session_server(sidecar, timeout):
    """The member (host:port) the sidecar's session is on, from its log."""
    def find():
        servers = [line.get("server") for line in sidecar.log_lines()
                   if line.get("msg") == "zookeeper session established"]
        return servers[-1] if servers else None
    return wait_for(f"{sidecar.name}'s session", find, timeout)


def test_layout_is_kazoos(zk):
    """3 sidecars: one node each in kazoo's layout, the identity as data; the lowest leads and
    its czxid is the token everybody reports."""
    sidecars, leader = start(zk)
    with Observer(sidecars) as obs:
        time.sleep(3 * P)
        states = {s.name: s.status() for s in sidecars}
        nodes = zk.contenders()
        log(f"nodes: {nodes}")
        check([n["data"] for n in nodes] == [s.name for s in sidecars],
              f"one node per candidate, in start order, its identity as data: {nodes}")
        check(all(len(n["name"]) == 32 + len("__lock__") + 10 for n in nodes),
              f"<uuid hex>__lock__<10 digits>: {nodes}")
        check(nodes[0]["data"] == leader.name, f"the lowest node leads: {nodes} / {leader.name}")
        for name, st in states.items():
            check(st["store"] == "zookeeper" and st["lease"] == zk.lease, f"{name}: {st}")
            check(st["holder"] == leader.name and st["fencingToken"] == nodes[0]["czxid"],
                  f"{name} names the holder and its node's czxid: {st} / {nodes[0]}")
    obs.check_safety()


def test_kazoo_and_leasehold_take_turns(zk):
    """kazoo's Election and leasehold candidates on one path, queued k1, a, k2, b: each leads
    only in its turn (the lowest node), never two at once."""
    k1 = zk.kazoo_election("k1")
    wait_for("k1 elected", k1.leading, FIRST_LEADER)
    a = zk.sidecar("a").start()
    wait_for("a queued", lambda: len(zk.contenders()) == 2, FIRST_LEADER)
    k2 = zk.kazoo_election("k2")
    wait_for("k2 queued", lambda: len(zk.contenders()) == 3, FIRST_LEADER)
    b = zk.sidecar("b").start()
    wait_for("b queued", lambda: len(zk.contenders()) == 4, FIRST_LEADER)
    handover = P + slack(1)  # a delete, one watch event, one read
    with Observer([a, b]) as obs:
        time.sleep(3 * P)
        check(not a.leader() and not b.leader(), "k1 leads: neither sidecar may")
        check(a.status()["holder"] == "k1", f"a names k1 the holder: {a.status()}")
        k1.resign()  # k1's node goes; k1 queues again at the back
        wait_for("a to lead after k1", a.leader, handover)
        time.sleep(3 * P)  # under the Observer's samples
        check(not k2.leading() and a.leader(), "a leads, k2 waits")
        a.signal(signal.SIGTERM)
        check(a.wait(timeout=slack(10)) == 0, "a exits 0 after its release")
        wait_for("k2 elected after a", k2.leading, handover)
        time.sleep(3 * P)
        check(not b.leader(), "k2 leads: b may not")
        k2.resign()
        wait_for("b to lead after k2", b.leader, handover)
        time.sleep(3 * P)
        check(len(k1.terms()) == 1 and b.leader(), "b leads, k1 waits")
        b.signal(signal.SIGTERM)
        check(b.wait(timeout=slack(10)) == 0, "b exits 0 after its release")
        wait_for("k1 elected again after b", lambda: len(k1.terms()) == 2, handover)
    terms = obs.check_safety()
    claims = [(t[0], t[1], t[2]) for t in terms]
    claims += [(start, end or time.time(), k.identifier) for k in (k1, k2)
               for start, end in k.terms()]
    claims.sort()
    log("terms in order: " + ", ".join(f"{who} {s:.3f}-{e:.3f}" for s, e, who in claims))
    check([who for _, _, who in claims] == ["k1", "a#0", "k2", "b#0", "k1"],
          f"each in its turn: {claims}")
    for (_, end, x), (start, _, y) in zip(claims, claims[1:]):
        check(start >= end - 0.001, f"{x} claimed until {end:.3f}, {y} from {start:.3f}")


def test_session_expiry_under_sigstop(zk):
    """The leader paused longer than its session: the others lead only once the servers
    expired the session (the node's deletion); the woken one answers leader=false at once and
    queues again with a new session and a higher token."""
    sidecars, leader = start(zk)
    with Observer(sidecars) as obs:
        token = leader.status()["fencingToken"]
        time.sleep(2 * P)
        t0 = time.time()
        leader.signal(signal.SIGSTOP)
        others = [s for s in sidecars if s is not leader]
        new = the_leader(others, timeout=EXPIRY_TAKEOVER)
        took = time.time() - t0
        log(f"takeover {took:.3f}s after the SIGSTOP (session {SESSION}s)")
        # The last ping was answered at most I = P before the stop.
        check(took >= SESSION - P - 0.05, f"nobody before the session expired: {took:.3f}s")
        time.sleep(max(0.0, 2 * SESSION - (time.time() - t0)))
        leader.signal(signal.SIGCONT)
        first = wait_for("the woken leader to answer", leader.status, slack(5), interval=0.001)
        check(not first["leader"], f"first answer after SIGCONT is leader=false: {first}")
        wait_for("the woken one to queue again", lambda: len(zk.contenders()) == 3,
                 FIRST_LEADER)
        check(new.leader() and new.status()["fencingToken"] > token, "token went up")
        mine = [n for n in zk.contenders() if n["data"] == leader.name]
        check(mine and mine[0]["czxid"] > new.status()["fencingToken"],
              f"its new node is last in the queue: {zk.contenders()}")
    obs.check_safety()


def test_member_killed_session_kept(zk3):
    """kill -9 of the member the leader's session is on: the client moves to another member with
    the same session; the same leader leads with the same token (its node lived)."""
    sidecars, leader = start(zk3)
    with Observer(sidecars) as obs:
        token = leader.status()["fencingToken"]
        server = session_server(leader, slack(5))
        member = next(m for m in zk3.members if m.address == server)
        log(f"{leader.name}'s session is on {member.name} ({member.mode()})")
        time.sleep(2 * P)
        t0 = time.time()
        member.kill()
        time.sleep(R)
        wait_for(f"{leader.name} to lead again", leader.leader, SESSION + slack(5))
        took = time.time() - t0
        st = leader.status()
        check(st["fencingToken"] == token, f"the same term (the session lived): {st}")
        check(session_server(leader, slack(1)) != server, "the session moved")
        lapses = [t0_ for t0_, _, inc, s in obs.samples
                  if inc.startswith(leader.name) and s and not s.get("leader") and t0_ > t0]
        log(f"leading again {took:.2f}s after the kill; answered leader=false "
            f"{len(lapses)} times meanwhile (the ensemble re-elects when its leader dies)")
    obs.check_safety()


def test_quorum_lost(zk3):
    """Two of three members paused: the leader stops claiming within R + L, nobody leads while
    the quorum is lost, and one leads again once it is back."""
    sidecars, leader = start(zk3)
    with Observer(sidecars) as obs:
        time.sleep(2 * P)
        server = session_server(leader, slack(5))
        paused = [m for m in zk3.members if m.address != server][:2]
        t0 = time.time()
        for m in paused:
            m.signal(signal.SIGSTOP)
        wait_for("the leader to stop claiming", lambda: not leader.leader(),
                 R + SERVER_LAG + slack(1))
        stepped = time.time() - t0
        log(f"stopped claiming {stepped:.3f}s after the quorum was lost (R + L = "
            f"{R + SERVER_LAG}s)")
        time.sleep(D)
        check(not any(s.leader() for s in sidecars), "nobody leads without a quorum")
        for m in paused:
            m.signal(signal.SIGCONT)
        healed = the_leader(sidecars, timeout=SESSION + slack(15))
        log(f"{healed.name} leads {time.time() - t0:.2f}s after the loss")
    obs.check_safety()


def keeps_running_not_leading(sidecar, words, timeout):
    """The sidecar stays up, does not lead, and its log says `words` (each)."""
    def said():
        text = sidecar.log_path.read_text(errors="replace")
        return all(w in text for w in words)
    wait_for(f"{sidecar.name} to say {words}", said, timeout)
    check(sidecar.alive(), f"{sidecar.name} keeps running")
    check(not sidecar.leader(), f"{sidecar.name} does not lead")


def test_bad_input(zk):
    """A password that is not the owner's and another user (the owner's nodes, the path
    included, are for it alone: NoAuth), unreachable servers, a connect string that cannot work,
    a session timeout the servers cut below R + L + P: a clear message naming the problem, once,
    never a crash or a hang, and no password in any log."""
    owner_pw = zk.password_file("lh", "right-password")
    owner = zk.sidecar("owner", user="lh", password_file=owner_pw).start()
    wait_for("owner to lead", owner.leader, FIRST_LEADER)
    unreachable = zk.sidecar("unreachable", servers=f"127.0.0.1:{free_port()}").start()
    wrong_pw = zk.password_file("lh-wrong", "not-the-password")
    impostor = zk.sidecar("impostor", user="lh", password_file=wrong_pw).start()
    other_pw = zk.password_file("other", "other-password")
    other = zk.sidecar("other", user="other", password_file=other_pw).start()
    for s, words in ((unreachable, ["no server of the connect string answered",
                                    "Connection refused"]),
                     (impostor, ["NoAuth"]), (other, ["NoAuth"])):
        keeps_running_not_leading(s, words, 2 * D + slack(3))
    time.sleep(2 * D)
    for s in (impostor, other):
        said = [line for line in s.log_lines() if line.get("msg") == "store request failed"]
        check(len(said) == 1, f"{s.name}: the refusal said once, not every P: {said}")
        check("NoAuth" in s.status().get("problem", ""), f"{s.name}'s /leader: {s.status()}")
    check(owner.leader(), "the owner leads throughout")
    check(len(zk.contenders(auth="lh:right-password")) == 1, "only the owner's node")
    for s in (owner, unreachable, impostor, other):
        text = s.log_path.read_text(errors="replace")
        check("right-password" not in text and "not-the-password" not in text
              and "other-password" not in text, f"{s.name}: no password in the log")

    # The servers allow 40 ticks: a lag that needs more is refused by the candidate, not by the
    # configuration (which cannot know the servers' maximum).
    greedy = zk.sidecar("greedy", server_lag=40 * TICK - R - P + 0.5).start()
    keeps_running_not_leading(greedy, ["session timeout of"], 2 * D + slack(3))

    bad = zk.sidecar("bad-servers", servers="zk-0:2181:7")
    bad.start(wait=False)
    rc = bad.wait(timeout=slack(10))
    text = bad.log_path.read_text(errors="replace")
    check(rc == 2 and "--zk-servers" in text, f"exit 2 naming --zk-servers: {rc} {text[-300:]}")


def test_foreign_nodes(zk):
    """Children of the path that are not in kazoo's layout (a kazoo program's, an operator's)
    are named once in the log and ignored: the election goes on among the contenders."""
    zk.kazoo(f"zk.ensure_path({zk.lease_path()!r})\n"
             f"zk.create({zk.lease_path() + '/foreign'!r}, b'x')\n"
             f"zk.create({zk.lease_path() + '/abc__lock__12'!r}, b'x')\n")
    sidecars, leader = start(zk, n=2)
    time.sleep(3 * P)
    named = [line for line in leader.log_lines() if "not contenders" in line.get("msg", "")]
    check(len(named) == 1 and "foreign" in named[0].get("nodes", ""),
          f"the foreign nodes named once: {named}")
    check(leader is sidecars[0], "the first contender leads")


def test_tls(zk_tls):
    """TLS to a secureClientPort, verified: a sidecar with the servers' CA leads; one with
    another CA, and one speaking TLS to the plain port, are refused the connection, say so and
    keep trying without leading."""
    env = zk_tls
    good = env.sidecar("good", servers=env.secure_connect_string,
                       extra_args=["--zk-cacert", str(env.dir / "ca.crt")]).start()
    wait_for("good to lead over TLS", good.leader, FIRST_LEADER)
    check(session_server(good, slack(1)) == env.members[0].secure_address,
          "its session is on the secure port")
    wrong_ca = env.sidecar("wrong-ca", servers=env.secure_connect_string,
                           extra_args=["--zk-cacert", str(env.dir / "other-ca.crt")]).start()
    plain = env.sidecar("plain", extra_args=["--zk-tls", "--zk-cacert",
                                             str(env.dir / "ca.crt")]).start()
    for s in (wrong_ca, plain):
        keeps_running_not_leading(s, ["TLS handshake"], 2 * D + slack(3))
    check("certificate" in wrong_ca.log_path.read_text(errors="replace"),
          "the wrong CA's failure names the certificate")
    check(good.leader() and len(env.contenders()) == 1, "only the verified one is a contender")


def test_wire_client_on_a_real_server(zk_tls):
    """The wire client's own checks against this real server (zookeeper_test's
    ZkRealServerTest: an ephemeral-sequential node, watches, pings, creator-only ACLs, a
    container node, TLS verified and refused for another name), run here so they never skip."""
    binary = os.environ.get("ZOOKEEPER_TEST_BIN")
    check(binary, "ZOOKEEPER_TEST_BIN names no zookeeper_test binary (ctest sets it)")
    env = zk_tls
    out = subprocess.run(
        [binary, "--gtest_filter=ZkRealServerTest.*"], capture_output=True, text=True,
        timeout=slack(120),
        env={**os.environ, "LEASEHOLD_ZK_TEST_SERVERS": env.connect_string,
             "LEASEHOLD_ZK_TEST_TLS_SERVERS": env.secure_connect_string,
             "LEASEHOLD_ZK_TEST_CA": str(env.dir / "ca.crt")})
    log(out.stdout[-3000:])
    check(out.returncode == 0, f"ZkRealServerTest failed: {out.stdout[-2000:]}{out.stderr[-500:]}")
    check("SKIPPED" not in out.stdout, "no check skipped")


# ---- shards: --shards N on ZooKeeper --------------------------------------------------------
SHARDS = 8
# A start or a join: no expiry to wait for (P for a cold start); the slack is for 3 sidecars
# starting and each move's drop, delete, create and read on 2 shared cores.
SHARDS_SETTLED = P + D + slack(7)


def shard_layout(env, sidecars):
    """What kazoo sees: the identities under /<lease>/members, and each shard's election
    /<lease>/shards/i as kazoo's Election(...).contenders() names it; checked against /shards:
    one contender per shard, its owner, whose node's czxid is the token."""
    out = env.kazoo(
        "import re\n"
        f"root = {env.lease_path()!r}\n"
        f"n = {SHARDS}\n"
        "members = sorted(zk.get(root + '/members/' + c)[0].decode()\n"
        "                 for c in zk.get_children(root + '/members'))\n"
        "shards = []\n"
        "for i in range(n):\n"
        "    p = root + '/shards/' + str(i)\n"
        "    found = [c for c in zk.get_children(p) if re.search(r'__lock__(-?\\d{10})$', c)]\n"
        "    found.sort(key=lambda c: re.search(r'__lock__(-?\\d{10})$', c).group(1))\n"
        "    czxids = [zk.get(p + '/' + c)[1].czxid for c in found]\n"
        "    shards.append({'contenders': zk.Election(p).contenders(), 'czxids': czxids})\n"
        "print(json.dumps({'members': members, 'shards': shards}))\n")
    tokens = {o["shard"]: (s.name, o["fencingToken"]) for s in sidecars
              for o in shards_of(s)["owned"]}
    check(out["members"] == sorted(s.name for s in sidecars),
          f"one member node per replica, its identity as data: {out['members']}")
    for i, sh in enumerate(out["shards"]):
        check(sh["contenders"] == [tokens[i][0]] and sh["czxids"] == [tokens[i][1]],
              f"shard {i}: kazoo's contenders {sh}, /shards {tokens.get(i)}")
    return out


def test_shards(zk):
    """--shards 8, 3 replicas: balanced and disjoint, the group /<lease> in kazoo's layout (one
    member node each under /<lease>/members; kazoo's Election("/<lease>/shards/i").contenders()
    names shard i's owner only, its node's czxid the token); a 4th joins: only surplus moves, all
    to it; SIGTERM of one: it exits 0, its nodes are gone and the 3 others balance at once;
    kill -9 of another: its shards are taken only once its session can have expired, then
    balanced over the two. Every replica's /shards
    sampled throughout: no shard claimed twice, tokens up every term."""
    group = [zk.sidecar(f"replica-{i}", extra_args=["--shards", str(SHARDS)]) for i in range(3)]
    with ShardObserver(list(group)) as obs:
        t0 = time.monotonic()
        for s in group:
            s.start(wait=False)
        before = wait_balanced(group, SHARDS, timeout=SHARDS_SETTLED)
        log(f"3 replicas x {SHARDS} shards balanced {time.monotonic() - t0:.2f}s after start: "
            f"{before}")
        layout = shard_layout(zk, group)
        log(f"kazoo: members {layout['members']}, contenders "
            f"{[sh['contenders'] for sh in layout['shards']]}")

        newcomer = zk.sidecar("replica-3", extra_args=["--shards", str(SHARDS)])
        obs.add(newcomer)
        t0 = time.monotonic()
        newcomer.start(wait=False)
        group.append(newcomer)
        after = wait_balanced(group, SHARDS, timeout=SHARDS_SETTLED)
        moved = sorted(i for i in range(SHARDS) if before[i] != after[i])
        log(f"a 4th joined: balanced {time.monotonic() - t0:.2f}s later, moved {moved}")
        check(moved and all(after[i] == newcomer.name for i in moved),
              f"only surplus moved, all to the newcomer: {moved}")
        shard_layout(zk, group)

        leaving = group.pop(0)
        t0 = time.monotonic()
        leaving.signal(signal.SIGTERM)
        wait_for(f"{leaving.name} to exit", lambda: not leaving.alive(), R + slack(3))
        code = leaving.reap()
        before = wait_balanced(group, SHARDS, timeout=SHARDS_SETTLED)
        log(f"SIGTERM: exit {code}, the 3 others balanced {time.monotonic() - t0:.2f}s after "
            "the signal")
        check(code == 0, f"the leaving replica exits 0: {code}")
        # Its nodes went with it (deleted, and its session closed): kazoo sees the 3 others only.
        shard_layout(zk, group)

        victim = group.pop(0)
        its = sorted(i for i, o in before.items() if o == victim.name)
        victim.kill()
        t_kill = time.monotonic()
        first = None
        while balance_problem(group, SHARDS) is not None or first is None:
            now = time.monotonic() - t_kill
            claimed, _ = shard_owners(group)
            if first is None and any(claimed.get(i) for i in its):
                first = now
            check(now < EXPIRY_TAKEOVER + SHARDS_SETTLED,
                  f"not balanced {now:.1f}s after the kill: {balance_problem(group, SHARDS)}")
            time.sleep(0.02)
        log(f"kill -9: its shards {its} first claimed by another {first:.2f}s after the kill, "
            f"balanced over 2 at {time.monotonic() - t_kill:.2f}s")
        # Its session was last heard of up to a third of the session timeout before the kill
        # (the client's pings); the servers expire it SESSION after that.
        check(first >= SESSION * 2 / 3 - 0.1,
              f"taken before its session could expire: {first:.2f}s")
        time.sleep(P)
        shard_layout(zk, group)
    terms = obs.check_safety()
    log(f"/shards: {len(obs.samples)} samples, {terms} terms, no shard claimed twice, tokens up "
        "every term")


def test_shards_member_killed(zk3):
    """3 members; 3 replicas x 8 shards. kill -9 of the member the first replica's session is
    on (the whole replica's group, membership and every shard, is that one session): its client
    moves to another member with the same session, no shard moves and every owner keeps its
    token (the nodes lived); /shards sampled throughout."""
    group = [zk3.sidecar(f"replica-{i}", extra_args=["--shards", str(SHARDS)]) for i in range(3)]
    with ShardObserver(list(group)) as obs:
        for s in group:
            s.start(wait=False)
        owners = wait_balanced(group, SHARDS, timeout=SHARDS_SETTLED)
        tokens = {(s.name, o["shard"], o["fencingToken"]) for s in group
                  for o in shards_of(s)["owned"]}
        server = session_server(group[0], slack(5))
        member = next(m for m in zk3.members if m.address == server)
        log(f"{group[0].name}'s session is on {member.name} ({member.mode()}); owners {owners}")
        t0 = time.monotonic()
        member.kill()
        time.sleep(R)
        after = wait_balanced(group, SHARDS, timeout=SESSION + SHARDS_SETTLED)
        wait_for("every owner claiming its shards with the same tokens again",
                 lambda: {(s.name, o["shard"], o["fencingToken"]) for s in group
                          for o in shards_of(s)["owned"]} == tokens, SESSION + slack(5))
        log(f"the same owners and tokens {time.monotonic() - t0:.2f}s after the kill")
        check(after == owners, f"no shard moved: {owners} -> {after}")
        check(session_server(group[0], slack(1)) != server, "the session moved")
    terms = obs.check_safety()
    log(f"/shards: {len(obs.samples)} samples, {terms} terms")
    check(terms == SHARDS, f"one term per shard throughout, none new: {terms}")
