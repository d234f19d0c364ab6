"""A testbed: emulated hosts on this machine, each with its namespace, address, NIC rate and CPUs.

>>> spec = TestbedSpec((HostSpec("b1", cpus=(0,), nic_rate_mbit=100), HostSpec("c1", cpus=(1,))))
>>> with Testbed.create(spec) as tb:                                    # doctest: +SKIP
...     p = tb.spawn("b1", ["iperf3", "-s", "-B", tb.address("b1")])
...     tx, rx = tb.nic_bytes("b1")

Everything is checked before anything is made (root, pyroute2, namespaces, the spec against the
machine); what is made is recorded in a state file first and removed by :meth:`Testbed.close`, which
runs on leaving the ``with`` block, on an exception, at interpreter exit, and on SIGTERM/SIGINT (the
signal is then passed on as before).  A testbed left by a killed process is removed by
:func:`kbench.testbed.reap_stale`, which :meth:`Testbed.create` calls first.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from kbench.testbed import cgroups, env, names, network
from kbench.testbed.errors import TestbedError
from kbench.testbed.spec import TestbedSpec
from kbench.testbed.state import DEFAULT_RUNTIME_DIR, State
from kbench.testbed.teardown import reap_stale, teardown

__all__ = ["Testbed"]

CLONE_NEWNET = 0x40000000
T = TypeVar("T")
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


class Testbed:
    """Emulated hosts made from a :class:`TestbedSpec`; make one with :meth:`create`."""

    __test__ = False  # not a pytest test class, whatever its name says

    def __init__(
        self,
        spec: TestbedSpec,
        environment: env.Environment | None = None,
        runtime_dir: Path = DEFAULT_RUNTIME_DIR,
        handle_signals: bool = True,
    ) -> None:
        self.spec = spec
        self.environment = environment
        self.runtime_dir = Path(runtime_dir)
        self.handle_signals = handle_signals
        self.id = ""
        self._state: State | None = None
        self._layout = cgroups.CgroupLayout(0)
        self._links: dict[str, network.HostLink] = {}
        self._cgroups: dict[str, tuple[Path, ...]] = {}
        self._procs: list[subprocess.Popen[Any]] = []
        self._counters: dict[str, network.LinkCounters] = {}
        self._prev_handlers: dict[int, Any] = {}
        self._lock = threading.RLock()

    # ---------------------------------------------------------------- making
    @classmethod
    def create(
        cls,
        spec: TestbedSpec,
        environment: env.Environment | None = None,
        runtime_dir: Path = DEFAULT_RUNTIME_DIR,
        handle_signals: bool = True,
    ) -> Testbed:
        """Check the machine and the spec, remove stale testbeds, and make this one."""
        tb = cls(spec, environment, runtime_dir, handle_signals)
        tb.open()
        return tb

    def open(self) -> None:
        if self._state is not None:
            raise TestbedError(f"testbed {self.id} is already made")
        e = self.environment if self.environment is not None else env.probe()
        env.require(e)
        env.check_spec(self.spec, e)
        reap_stale(self.runtime_dir)
        self._layout = e.cgroups
        self.id = self._fresh_id()
        self._state = State.new(self.id, self.runtime_dir)
        self._install_handlers()
        try:
            self._build()
        except BaseException as e:
            try:
                self.close()
            except TestbedError as cleanup:
                e.add_note(str(cleanup))
            raise

    def _fresh_id(self) -> str:
        existing = set(network.list_netns())
        while True:
            tid = names.new_id()
            taken = (
                (self.runtime_dir / f"{tid}.json").exists()
                or any(n.startswith(f"kbench-{tid}-") for n in existing)
                or any(any(names.is_ours(d.name, tid) for d in root.iterdir()) for root in self._layout.roots)
            )
            if not taken:
                return tid

    def _build(self) -> None:
        st = self._state
        assert st is not None
        sw = names.switch_netns(self.id)
        st.record("netns", sw)
        network.create_netns(sw)
        network.make_switch(self.id)
        for i, h in enumerate(self.spec.hosts):
            ns = names.netns_name(self.id, h.name)
            st.record("netns", ns)
            network.create_netns(ns)
            self._links[h.name] = network.add_host(self.id, i, h, str(self.spec.address(h.name)))
        if self._layout.roots:
            for h in self.spec.hosts:
                name = names.cgroup_name(self.id, h.name)
                dirs = cgroups.paths(self._layout, name)
                for d in dirs:
                    st.record("cgroup", str(d))
                self._cgroups[h.name] = cgroups.create(self._layout, name, h.cpus, h.cpu_quota)

    # ------------------------------------------------------------- accessors
    def _link(self, host: str) -> network.HostLink:
        if self._state is None:
            raise TestbedError("the testbed is not made (or closed); use Testbed.create(spec)")
        self.spec.host(host)  # names the hosts when unknown
        return self._links[host]

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(h.name for h in self.spec.hosts)

    def address(self, host: str) -> str:
        """The host's IPv4 address (no prefix length)."""
        self._link(host)
        return str(self.spec.address(host).ip)

    def netns(self, host: str) -> str:
        """The name of the host's network namespace (as ``ip netns list`` shows it)."""
        return self._link(host).netns

    def interface(self, host: str) -> str:
        return self._link(host).ifname

    def cgroup_dirs(self, host: str) -> tuple[Path, ...]:
        """The host's cgroup directories (empty where no cgroup hierarchy is writable)."""
        self._link(host)
        return self._cgroups.get(host, ())

    def describe(self) -> dict[str, Any]:
        """What this testbed is, for a manifest: its id, subnet, cgroup layout and every host's
        address, namespace, interface, CPUs, quota, NIC rate (with the tbf settings) and delay."""
        self._link(self.hosts[0])
        hosts = []
        for h in self.spec.hosts:
            link = self._links[h.name]
            hosts.append(
                {
                    "name": h.name,
                    "address": str(self.spec.address(h.name)),
                    "netns": link.netns,
                    "interface": link.ifname,
                    "cpus": list(h.cpus),
                    "cpu_quota": h.cpu_quota,
                    "nic_rate_mbit": h.nic_rate_mbit,
                    "tbf": network.tbf_params(h.nic_rate_mbit) if h.nic_rate_mbit is not None else None,
                    "delay_ms": h.delay_ms,
                    "cgroups": [str(d) for d in self._cgroups.get(h.name, ())],
                }
            )
        return {
            "id": self.id,
            "subnet": str(self.spec.network),
            "cgroup_version": self._layout.version,
            "cpu_set_by": "cpuset cgroup and affinity" if self._layout.cpuset is not None else "affinity",
            "hosts": hosts,
        }

    # ----------------------------------------------------------------- using
    def spawn(self, host: str, argv: Sequence[str], **popen_kwargs: Any) -> subprocess.Popen[Any]:
        """Start ``argv`` on ``host``: in its network namespace and cgroup, with its CPU affinity.

        The pid namespace stays the machine's (``/proc/PID`` works).  A ``preexec_fn`` given runs
        after the process has entered the host.  Processes still running at :meth:`close` are killed.
        """
        link = self._link(host)
        nspath = network.NETNS_DIR / link.netns
        cpus = set(self.spec.host(host).cpus)
        dirs = self._cgroups.get(host, ())
        then: Callable[[], Any] | None = popen_kwargs.pop("preexec_fn", None)

        def enter() -> None:  # pragma: no cover - runs in the child between fork and exec
            _setns(nspath)
            pid = str(os.getpid()).encode()
            for d in dirs:
                fd = os.open(d / "cgroup.procs", os.O_WRONLY)
                try:
                    os.write(fd, pid)
                finally:
                    os.close(fd)
            os.sched_setaffinity(0, cpus)
            if then is not None:
                then()

        with self._lock:
            proc = subprocess.Popen(list(argv), preexec_fn=enter, **popen_kwargs)
            self._procs.append(proc)
        return proc

    def call_in(self, host: str, fn: Callable[[], T]) -> T:
        """Run ``fn()`` from inside ``host``'s network namespace (on a thread of its own) and return its result.

        What ``fn`` connects to, and the threads it starts (librdkafka's), are in the host's network.
        """
        nspath = network.NETNS_DIR / self._link(host).netns
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                _setns(nspath)
                box["value"] = fn()
            except BaseException as e:  # handed to the caller's thread
                box["error"] = e

        t = threading.Thread(target=run, name=f"testbed-{host}", daemon=True)
        t.start()
        t.join()
        if "error" in box:
            raise box["error"]
        return box["value"]  # type: ignore[no-any-return]

    def nic_bytes(self, host: str) -> tuple[int, int]:
        """(tx_bytes, rx_bytes) of the host's NIC since it was made (Ethernet frames: headers included).

        The first call per host opens a netlink socket in its namespace (tens of ms); later calls take
        a few ms, so reading every host at a window's edges stays close to the edge.
        """
        link = self._link(host)
        with self._lock:
            counters = self._counters.get(host)
            if counters is None:
                counters = self._counters[host] = network.LinkCounters(link.netns, link.ifname)
        return counters.read()

    def nic_counters(self) -> dict[str, tuple[int, int]]:
        """``nic_bytes`` of every host, read one after the other."""
        return {h: self.nic_bytes(h) for h in self.hosts}

    # -------------------------------------------------------------- clean-up
    def close(self) -> None:
        """Remove everything this testbed made (killing what still runs on its hosts); idempotent."""
        if self._state is not None and self._state.pid != os.getpid():
            return  # a forked child (pyroute2's helpers, multiprocessing) inherited the atexit hook: not its testbed
        with self._lock:
            st, self._state = self._state, None
            self._restore_handlers()
            if st is None:
                return
            for c in self._counters.values():  # their sockets would keep the namespaces alive
                c.close()
            self._counters.clear()
            problems = teardown(st, self._layout)
            for p in self._procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    problems.append(f"process {p.pid} did not exit")
            self._procs.clear()
            self._links.clear()
            self._cgroups.clear()
        if problems:
            raise TestbedError(f"testbed {st.id} not fully removed: " + "; ".join(problems))

    def __enter__(self) -> Testbed:
        if self._state is None:
            self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _install_handlers(self) -> None:
        atexit.register(self.close)
        if not self.handle_signals or threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self._prev_handlers[sig] = signal.signal(sig, self._on_signal)

    def _restore_handlers(self) -> None:
        atexit.unregister(self.close)
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be changed there; ours passes signals on after a no-op close
        prev, self._prev_handlers = self._prev_handlers, {}
        for sig, handler in prev.items():
            if signal.getsignal(sig) == self._on_signal:
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: Any) -> None:
        prev = self._prev_handlers.get(signum, signal.SIG_DFL)
        try:
            self.close()
        finally:
            # the signal goes on as if the testbed had not been there
            if callable(prev):
                prev(signum, frame)
            elif prev == signal.SIG_DFL:
                signal.signal(signum, signal.SIG_DFL)
                signal.raise_signal(signum)
