"""The testbed's host layer (kbench.testbed): shaped links, CPU sets and cgroups, NIC counters,
clean-up after close, a signal and a SIGKILL, refusals, and a real 3-broker cluster on testbed hosts.

These tests need root and network namespaces (the suite runs as root); without them they fail with
the testbed's own one-line reason.  Only the bad-environment tests simulate a machine lacking
something, by injecting an Environment.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kbenv import KBENCH_PATH

from kbench.kafka import metrics
from kbench.testbed import (
    HostSpec,
    Testbed,
    TestbedError,
    TestbedSpec,
    cgroups,
    env,
    names,
    network,
    reap_stale,
    spread_cpus,
)
from kbench.testbed.brokers import cluster_on
from kbench.testbed.state import pid_start_time

ROOT = Path(__file__).resolve().parent.parent
PYENV = {**os.environ, "PYTHONPATH": KBENCH_PATH}
MBIT = 50.0
PAYLOAD = 4 << 20

# a TCP sink: listens on its host's address, prints its port, counts what it receives and sends the count back
SINK = r"""
import socket, sys
s = socket.socket(); s.bind((sys.argv[1], 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
n = 0
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    n += len(b)
c.sendall(str(n).encode()); c.close()
"""
# a TCP source: sends N bytes, half-closes, waits for the sink's count; prints seconds and the count
SOURCE = r"""
import socket, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
c = socket.create_connection((host, port))
data = memoryview(b"x" * n)
t0 = time.monotonic()
c.sendall(data)
c.shutdown(socket.SHUT_WR)
got = c.recv(64)
print(time.monotonic() - t0, got.decode(), flush=True)
"""


def _cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def _cpu_list(text: str) -> list[int]:
    """A kernel CPU list ("0-2,5") as numbers."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _spec() -> TestbedSpec:
    cpus = _cpus()
    return TestbedSpec(
        (
            HostSpec("a", cpus=(cpus[0],), nic_rate_mbit=MBIT),
            HostSpec("b", cpus=(cpus[-1],)),
            HostSpec("c", cpus=tuple(cpus), cpu_quota=0.5),
        )
    )


@pytest.fixture(scope="module")
def tb() -> Iterator[Testbed]:
    # the default runtime dir: should this session die, the next testbed made anywhere reaps it
    with Testbed.create(_spec()) as t:
        yield t


def transfer(t: Testbed, src: str, dst: str, n: int) -> tuple[float, dict[str, tuple[int, int]]]:
    """Move n bytes over TCP from host src to host dst: (seconds, NIC byte deltas per host)."""
    sink = t.spawn(dst, [sys.executable, "-c", SINK, t.address(dst)], stdout=subprocess.PIPE, text=True)
    try:
        assert sink.stdout is not None
        port = int(sink.stdout.readline())
        before = {h: t.nic_bytes(h) for h in (src, dst)}
        src_p = t.spawn(
            src, [sys.executable, "-c", SOURCE, t.address(dst), str(port), str(n)], stdout=subprocess.PIPE, text=True
        )
        out, _ = src_p.communicate(timeout=60)
        assert src_p.returncode == 0, out
        assert sink.wait(timeout=10) == 0
    finally:
        if sink.poll() is None:
            sink.kill()
            sink.wait()
    after = {h: t.nic_bytes(h) for h in (src, dst)}
    seconds, count = out.split()
    assert int(count) == n
    return float(seconds), {h: (after[h][0] - before[h][0], after[h][1] - before[h][1]) for h in (src, dst)}


@pytest.mark.testbed
def test_shaped_link_is_no_faster_than_its_rate_and_unshaped_is_much_faster(tb: Testbed) -> None:
    burst = network.tbf_params(MBIT)["burst"]
    floor = (PAYLOAD - burst) * 8 / (MBIT * 1e6)
    shaped, _ = transfer(tb, "a", "b", PAYLOAD)  # a's egress
    shaped_in, _ = transfer(tb, "b", "a", PAYLOAD)  # a's ingress (the switch port's egress)
    unshaped, _ = transfer(tb, "b", "c", PAYLOAD)
    assert shaped >= floor and shaped_in >= floor, (shaped, shaped_in, floor)
    assert unshaped * 3 < min(shaped, shaped_in), (unshaped, shaped, shaped_in)


@pytest.mark.testbed
def test_nic_bytes_count_a_bulk_transfer(tb: Testbed) -> None:
    _, d = transfer(tb, "b", "c", PAYLOAD)
    tx_b, rx_c = d["b"][0], d["c"][1]
    # every payload byte crosses the sender's NIC, plus Ethernet/IP/TCP headers: a veth counts GSO frames
    # of up to 64 KiB, so well under the 4.6 % of 1448-byte wire segments
    assert PAYLOAD <= tx_b <= 1.10 * PAYLOAD, tx_b
    assert PAYLOAD <= rx_c <= 1.10 * PAYLOAD, rx_c
    # the other direction carries only ACKs and the 7-byte reply
    assert d["b"][1] < 0.1 * PAYLOAD and d["c"][0] < 0.1 * PAYLOAD, d


@pytest.mark.testbed
def test_spawned_process_carries_its_hosts_cpu_set_cgroup_and_network(tb: Testbed) -> None:
    cpus = _cpus()
    for host, want in (("a", [cpus[0]]), ("b", [cpus[-1]]), ("c", cpus)):
        p = tb.spawn(host, ["sleep", "30"])
        try:
            status = Path(f"/proc/{p.pid}/status").read_text()
            allowed = next(
                line.split(":", 1)[1].strip() for line in status.splitlines() if line.startswith("Cpus_allowed_list")
            )
            assert _cpu_list(allowed) == want, (host, allowed)
            dirs = tb.cgroup_dirs(host)
            assert dirs, (
                "no writable cgroup hierarchy on this machine (the testbed test needs cgroup v1 cpu+cpuset or v2)"
            )
            lines = Path(f"/proc/{p.pid}/cgroup").read_text().splitlines()
            for d in dirs:
                assert p.pid in cgroups.procs(d)
                assert any(line.endswith(f":/{d.name}") for line in lines), (d, lines)
            # its network namespace is the host's (the same nsfs inode as /run/netns/<name>)
            assert os.stat(f"/proc/{p.pid}/ns/net").st_ino == os.stat(network.NETNS_DIR / tb.netns(host)).st_ino
        finally:
            p.kill()
            p.wait()
    layout = cgroups.detect()
    assert layout.cpu is not None
    quota_dir = layout.cpu / names.cgroup_name(tb.id, "c")
    if layout.version == 1:
        assert (
            int((quota_dir / "cpu.cfs_quota_us").read_text()) == int((quota_dir / "cpu.cfs_period_us").read_text()) // 2
        )
    else:
        assert (quota_dir / "cpu.max").read_text().split() == ["50000", "100000"]


@pytest.mark.testbed
def test_describe_lists_hosts_cpus_and_rates(tb: Testbed) -> None:
    d = tb.describe()
    json.dumps(d)  # fit for a manifest
    assert d["id"] == tb.id and d["subnet"] == "198.18.0.0/24"
    a = d["hosts"][0]
    assert (a["name"], a["address"], a["netns"], a["cpus"], a["nic_rate_mbit"]) == (
        "a",
        "198.18.0.1/24",
        tb.netns("a"),
        [_cpus()[0]],
        MBIT,
    )
    assert a["tbf"] == network.tbf_params(MBIT) and d["hosts"][2]["cpu_quota"] == 0.5
    assert [h["cgroups"] for h in d["hosts"]] == [[str(p) for p in tb.cgroup_dirs(h)] for h in tb.hosts]


def test_spread_cpus() -> None:
    assert spread_cpus(5, [0, 1]) == [(0,), (1,), (0,), (1,), (0,)]
    assert spread_cpus(2, [0, 1]) == [(0,), (1,)]
    assert spread_cpus(5, range(16)) == [(0, 1, 2, 3), (4, 5, 6), (7, 8, 9), (10, 11, 12), (13, 14, 15)]
    with pytest.raises(TestbedError, match="cannot spread"):
        spread_cpus(0, [0])


@pytest.mark.testbed
def test_hosts_have_addresses_and_no_route_off_the_machine(tb: Testbed) -> None:
    p = tb.spawn("a", ["ip", "-4", "-o", "route", "show", "table", "all"], stdout=subprocess.PIPE, text=True)
    out, _ = p.communicate(timeout=10)
    assert tb.address("a") == "198.18.0.1" and tb.address("c") == "198.18.0.3"
    assert "default" not in out and "198.18.0.0/24" in out, out


# ------------------------------------------------------------------ clean-up
def _cgroup_tree() -> set[str]:
    out: set[str] = set()
    for root in cgroups.detect().roots:
        out |= {f"{root}/{d.name}" for d in root.iterdir() if d.is_dir()}
    return out


def _changes(before: set[str], after: set[str], tid: str) -> list[str]:
    """What changed, other than other kbench testbeds (engineers share this machine)."""
    return sorted(
        n for n in before ^ after if not (Path(n).name.startswith("kbench-") and not names.is_ours(Path(n).name, tid))
    )


@pytest.mark.testbed
def test_close_leaves_namespaces_and_cgroups_as_before() -> None:
    ns_before, cg_before = set(network.list_netns()), _cgroup_tree()
    t = Testbed.create(_spec())
    state = t.runtime_dir / f"{t.id}.json"
    assert set(t.nic_counters()) == {"a", "b", "c"}  # the counters' sockets are open in the namespaces at close
    made = {n for n in set(network.list_netns()) - ns_before if names.is_ours(n, t.id)}
    assert made == {names.netns_name(t.id, h) for h in ("a", "b", "c", "switch")}
    assert state.exists() and json.loads(state.read_text())["pid"] == os.getpid()
    left = t.spawn("b", ["sleep", "600"])  # still running at close: killed
    t.close()
    assert left.wait(timeout=5) == -signal.SIGKILL
    assert _changes(ns_before, set(network.list_netns()), t.id) == []
    assert _changes(cg_before, _cgroup_tree(), t.id) == []
    assert not state.exists()
    t.close()  # idempotent
    with pytest.raises(TestbedError, match="closed"):
        t.nic_bytes("a")


@pytest.mark.testbed
def test_each_thing_is_recorded_before_it_is_made_and_a_failure_midway_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns_before, cg_before = set(network.list_netns()), _cgroup_tree()
    made: list[str] = []

    def recorded() -> list[str]:
        (state,) = tmp_path.glob("*.json")
        return [i["name"] for i in json.loads(state.read_text())["items"]]

    real_netns, real_cgroups = network.create_netns, cgroups.create

    def create_netns(name: str) -> None:
        assert name in recorded()
        made.append(name)
        real_netns(name)

    def create_cgroup(layout: cgroups.CgroupLayout, name: str, cpus: object, quota: float | None) -> tuple[Path, ...]:
        assert all(str(d) in recorded() for d in cgroups.paths(layout, name))
        if name.endswith("-b"):
            raise TestbedError("injected failure")
        out = real_cgroups(layout, name, cpus, quota)  # type: ignore[arg-type]
        made.extend(str(d) for d in out)
        return out

    monkeypatch.setattr(network, "create_netns", create_netns)
    monkeypatch.setattr(cgroups, "create", create_cgroup)
    with pytest.raises(TestbedError, match="injected failure"):
        Testbed.create(_spec(), runtime_dir=tmp_path)
    assert len(made) >= 5  # the switch, 3 hosts, host a's cgroup(s): then b's failed
    tid = made[0].split("-")[1]  # kbench-<id>-switch
    assert not [n for n in made if n in network.list_netns() or Path(n).exists()]
    assert _changes(ns_before, set(network.list_netns()), tid) == []
    assert _changes(cg_before, _cgroup_tree(), tid) == []
    assert list(tmp_path.iterdir()) == []


CHILD = r"""
import subprocess, sys
from pathlib import Path
from kbench.testbed import HostSpec, Testbed, TestbedSpec
spec = TestbedSpec((HostSpec("x", cpus=(0,)), HostSpec("y", cpus=(0,), nic_rate_mbit=10)))
tb = Testbed.create(spec, runtime_dir=Path(sys.argv[1]))
p = tb.spawn("x", ["sleep", "600"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(tb.id, p.pid, flush=True)
sys.stdin.read()
"""


def _start_child(state_dir: Path) -> tuple[subprocess.Popen[str], str, int]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(state_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=PYENV,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line, child.communicate()[1]
    tid, pid = line.split()
    return child, tid, int(pid)


def _gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while pid_start_time(pid) is not None:  # a zombie counts as gone
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.testbed
def test_sigkilled_testbed_is_reaped_by_the_next_process(tmp_path: Path) -> None:
    ns_before, cg_before = set(network.list_netns()), _cgroup_tree()
    child, tid, sleeper = _start_child(tmp_path)
    try:
        child.kill()
        child.communicate(timeout=30)
        # the SIGKILL left everything behind: namespaces, cgroups, the state file, the host's process
        assert {names.netns_name(tid, h) for h in ("x", "y", "switch")} <= set(network.list_netns())
        assert any(names.is_ours(Path(c).name, tid) for c in _cgroup_tree())
        assert (tmp_path / f"{tid}.json").exists() and pid_start_time(sleeper) is not None
        r = subprocess.run(
            [sys.executable, "-c", f"from kbench.testbed import reap_stale; print(reap_stale({str(tmp_path)!r}))"],
            capture_output=True,
            text=True,
            env=PYENV,
            timeout=60,
        )
        assert r.returncode == 0 and r.stdout.strip() == str([tid]), r.stderr
        assert _gone(sleeper)
        assert _changes(ns_before, set(network.list_netns()), tid) == []
        assert _changes(cg_before, _cgroup_tree(), tid) == []
        assert list(tmp_path.iterdir()) == []
        assert reap_stale(tmp_path) == []
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
        reap_stale(tmp_path)  # a failed assertion leaves nothing behind either


@pytest.mark.testbed
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_closes_the_testbed_and_passes_the_signal_on(tmp_path: Path, sig: signal.Signals) -> None:
    ns_before = set(network.list_netns())
    child, tid, sleeper = _start_child(tmp_path)
    try:
        child.send_signal(sig)
        _, err = child.communicate(timeout=60)
        # it died of the signal, as without a testbed (Python ends an uncaught KeyboardInterrupt by SIGINT)
        assert child.returncode == -sig, err
        assert ("KeyboardInterrupt" in err) == (sig == signal.SIGINT), err
        assert _gone(sleeper)
        assert _changes(ns_before, set(network.list_netns()), tid) == []
        assert list(tmp_path.iterdir()) == []
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
        reap_stale(tmp_path)  # a failed assertion leaves nothing behind either


@pytest.mark.testbed
def test_reap_leaves_a_live_testbed_alone(tb: Testbed) -> None:
    assert tb.id not in reap_stale(tb.runtime_dir)
    assert (tb.runtime_dir / f"{tb.id}.json").exists()
    assert tb.nic_bytes("a")[0] > 0  # still there


# ------------------------------------------------------------------ refusals
def _refused(tmp_path: Path, spec: TestbedSpec, environment: env.Environment) -> str:
    ns_before = set(network.list_netns())
    with pytest.raises(TestbedError) as e:
        Testbed.create(spec, environment=environment, runtime_dir=tmp_path)
    msg = str(e.value)
    assert "\n" not in msg
    assert not set(network.list_netns()) - ns_before  # nothing half made
    assert not list(tmp_path.iterdir())  # not even a state file
    return msg


@pytest.fixture(scope="module")
def real_env() -> env.Environment:
    e = env.probe()
    env.require(e)  # this machine must offer the testbed (root, pyroute2, namespaces, tbf)
    return e


@pytest.mark.testbed
def test_delay_without_netem_is_refused_naming_netem(tmp_path: Path, real_env: env.Environment) -> None:
    no_netem = dataclasses.replace(real_env, qdiscs=real_env.qdiscs - {"netem"})
    spec = TestbedSpec((HostSpec("a", cpus=(0,), delay_ms=5),))
    msg = _refused(tmp_path, spec, no_netem)
    assert "netem" in msg and "delay_ms" in msg and "host a" in msg, msg


@pytest.mark.testbed
def test_missing_cpu_is_refused(tmp_path: Path, real_env: env.Environment) -> None:
    bad = max(real_env.cpus) + 1
    msg = _refused(tmp_path, TestbedSpec((HostSpec("a", cpus=(0, bad)),)), real_env)
    assert f"CPU(s) {bad} do not exist" in msg, msg


@pytest.mark.testbed
@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"root": False}, "needs root"),
        ({"pyroute2": None}, "pip install 'kafka-kbench[testbed]'"),
        ({"netns": False, "netns_note": "unshare(CLONE_NEWNET) failed: Operation not permitted"}, "CONFIG_NET_NS"),
        ({"qdiscs": frozenset()}, "tbf"),
    ],
)
def test_missing_facility_is_one_line_and_nothing_is_made(
    tmp_path: Path, real_env: env.Environment, change: dict[str, object], needle: str
) -> None:
    msg = _refused(tmp_path, _spec(), dataclasses.replace(real_env, **change))  # type: ignore[arg-type]
    assert needle in msg, msg


@pytest.mark.testbed
def test_quota_without_cpu_controller_is_refused(tmp_path: Path, real_env: env.Environment) -> None:
    no_cgroups = dataclasses.replace(
        real_env, cgroups=cgroups.CgroupLayout(0, note="no writable cgroup hierarchy is mounted")
    )
    msg = _refused(tmp_path, _spec(), no_cgroups)
    assert "cpu_quota" in msg and "no writable cgroup hierarchy" in msg, msg


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"name": "a-name-far-too-long"}, "bad host name"),
        ({"name": "switch"}, "bad host name"),
        ({"name": "Up"}, "bad host name"),
        ({"cpus": ()}, "non-empty"),
        ({"cpus": (0, 0)}, "twice"),
        ({"cpu_quota": 0}, "positive"),
        ({"cpu_quota": 3.0}, "exceeds"),
        ({"nic_rate_mbit": -1}, "positive"),
        ({"delay_ms": -1}, "delay_ms"),
    ],
)
def test_bad_host_specs(kwargs: dict[str, object], needle: str) -> None:
    args: dict[str, object] = {"name": "a", "cpus": (0,), **kwargs}
    with pytest.raises(TestbedError, match=needle):
        HostSpec(**args)  # type: ignore[arg-type]


def test_bad_testbed_specs() -> None:
    with pytest.raises(TestbedError, match="used twice"):
        TestbedSpec((HostSpec("a", cpus=(0,)), HostSpec("a", cpus=(0,))))
    with pytest.raises(TestbedError, match="at least one host"):
        TestbedSpec(())
    with pytest.raises(TestbedError, match="bad subnet"):
        TestbedSpec((HostSpec("a", cpus=(0,)),), subnet="198.18.0.1/15")
    with pytest.raises(TestbedError, match="do not fit"):
        TestbedSpec(tuple(HostSpec(f"h{i}", cpus=(0,)) for i in range(3)), subnet="198.18.0.0/30")
    spec = TestbedSpec((HostSpec("a", cpus=(0,)), HostSpec("b", cpus=(0,))))
    assert str(spec.address("b")) == "198.18.0.2/24"


def test_cgroup_v2_only_machine(tmp_path: Path) -> None:
    """A v2-only layout (faked in a directory): the delegated controllers are used, cpuset and cpu.max written."""
    root = tmp_path / "unified"
    root.mkdir()
    (root / "cgroup.subtree_control").write_text("cpuset cpu io memory pids\n")
    layout = cgroups.detect(f"cgroup2 {root} cgroup2 rw,nosuid,nodev,noexec 0 0\n")
    assert (layout.version, layout.cpuset, layout.cpu, layout.roots) == (2, root, root, (root,))
    made = cgroups.create(layout, "kbench-abcdef-h", [1, 0], 0.25)
    assert made == (root / "kbench-abcdef-h",)
    assert (made[0] / "cpuset.cpus").read_text() == "0,1"
    assert (made[0] / "cpu.max").read_text() == "25000 100000"
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "cgroup.subtree_control").write_text("memory\n")
    plain = cgroups.detect(f"cgroup2 {bare} cgroup2 rw 0 0\n")
    assert (plain.cpu, plain.plain, plain.can_quota) == (None, bare, False) and "cpuset or cpu" in plain.note
    # a v1 hybrid machine: the v1 hierarchies win over a controller-less v2 mount
    v1 = tmp_path / "cpuset"
    v1.mkdir()
    hybrid = cgroups.detect(f"cgroup {v1} cgroup rw,nosuid,cpuset 0 0\ncgroup2 {bare} cgroup2 rw 0 0\n")
    assert (hybrid.version, hybrid.cpuset, hybrid.cpu) == (1, v1, None) and "cpu" in hybrid.note


# ------------------------------------------------------------------ Kafka
@pytest.mark.testbed
@pytest.mark.kafka
@pytest.mark.slow
def test_three_broker_cluster_on_testbed_hosts(tmp_path: Path) -> None:
    cpus = _cpus()
    half = max(1, len(cpus) // 2)
    spec = TestbedSpec(
        (
            HostSpec("b1", cpus=tuple(cpus[:half])),
            HostSpec("b2", cpus=tuple(cpus[half:] or cpus)),
            HostSpec("b3", cpus=tuple(cpus)),
            HostSpec("client", cpus=tuple(cpus)),
        )
    )
    # 15,000 JSON records of ~370 B at 5,000/s with linger.ms 100: batches of ~60 KB per partition,
    # so that Kafka's framing and the TCP/IP headers are a few % of the bytes (docs/testbed.md)
    n = 15_000
    brokers = ["b1", "b2", "b3"]
    with Testbed.create(spec) as t:
        with cluster_on(t, brokers, "client") as c:
            assert c.bootstrap_servers.split(",") == [f"198.18.0.{i}:{b.port}" for i, b in enumerate(c.brokers, 1)]
            for b, host in zip(c.brokers, brokers):
                assert os.stat(f"/proc/{b.pid}/ns/net").st_ino == os.stat(network.NETNS_DIR / t.netns(host)).st_ino
            urls = {h: b.metrics_url for h, b in zip(brokers, c.brokers)}

            def scrape(h: str) -> metrics.BrokerMetrics:
                url = urls[h]
                assert url is not None and url.startswith(f"http://{t.address(h)}:"), url
                # from inside the broker's host: the scrape stays on its loopback, off the NIC measured
                return t.call_in(h, lambda: metrics.scrape(url))

            k0 = {h: scrape(h) for h in brokers}
            before = {h: t.nic_bytes(h) for h in t.hosts}
            out = tmp_path / "r" / "produce.json"  # -o names a directory
            p = t.spawn(
                "client",
                [
                    sys.executable,
                    "-m",
                    "kbench",
                    "produce",
                    "--bootstrap",
                    c.bootstrap_servers,
                    "--topic",
                    "tb",
                    "--create",
                    "--partitions",
                    "3",
                    "--replication-factor",
                    "3",
                    "--topic-config",
                    "min.insync.replicas=2",
                    "-X",
                    "acks=all",
                    "-X",
                    "linger.ms=100",
                    "--rate",
                    "5000",
                    "--count",
                    str(n),
                    "--codec",
                    "none",
                    "--consume",
                    "-o",
                    str(out.parent),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=PYENV,
            )
            stdout, stderr = p.communicate(timeout=180)
            assert p.returncode == 0, stderr
            assert f"sent {n}, delivered {n}, failed 0" in stdout and "lost 0, duplicates 0" in stdout, stdout
            r = json.loads(out.read_text())
            payload = r["producer"]["bytes"]
            assert r["consumer"]["records"] == n and r["consumer"]["bytes"] == payload > 0
            d = {h: tuple(a - b for a, b in zip(t.nic_bytes(h), before[h])) for h in t.hosts}
            kafka = {h: metrics.delta(k0[h], scrape(h)) for h in brokers}
    # the client sent every record to the leaders and fetched every record back
    assert d["client"][0] >= payload and d["client"][1] >= payload, (d, payload)
    # with RF 3 every broker stores every record: from the producer as leader, or by fetching as follower
    for b in ("b1", "b2", "b3"):
        assert d[b][1] >= payload, (b, d, payload)
    # the brokers sent each record to the consumer once and to two followers
    assert sum(d[b][0] for b in ("b1", "b2", "b3")) >= 3 * payload, (d, payload)
    # Each broker's NIC bytes against the bytes Kafka itself counted (its JMX exporter): what it sent
    # is fetch responses to the consumer (BytesOut) and to followers (ReplicationBytesOut), what it
    # received produce requests (BytesIn) and fetched replicas (ReplicationBytesIn); the NIC also
    # carries Kafka's request/response framing, TCP ACKs and TCP/IP/Ethernet headers: within 10 %.
    for h in brokers:
        k = kafka[h]
        assert not k.regressed, (h, k)
        assert k.bytes_in and k.bytes_out and k.replication_bytes_in and k.replication_bytes_out, (h, k)
        tx = d[h][0] / (k.bytes_out + k.replication_bytes_out)
        rx = d[h][1] / (k.bytes_in + k.replication_bytes_in)
        assert 1.0 <= tx <= 1.10 and 1.0 <= rx <= 1.10, (h, tx, rx, d[h], k)
    # RF 3: every record reaches the two followers of its partition's leader
    sum_in = sum(k.bytes_in or 0 for k in kafka.values())
    sum_repl = sum(k.replication_bytes_in or 0 for k in kafka.values())
    assert abs(sum_repl / (2 * sum_in) - 1) < 0.02, (sum_repl, sum_in)
