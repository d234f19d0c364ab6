"""``kbench run --workers SCHEDULER``: each cell's P producers and C consumers on Dask workers.

The Kafka transport delegates here when its plan names a Dask scheduler (``[transport]
workers``).  Per repetition: consumers are placed first and waited for (assigned at the
partitions' ends), then producers get a common start instant on the wall clock a little in the
future (each waits for it; the spread of their actual first due times is the start skew).  A
fixed rate is split evenly: producer *k* keeps its own schedule at rate/P over its own disjoint
range of sequence numbers (``seq_base``), so every consumer's bitmap counts lost and duplicated
records across all producers of the run.  Results are merged exactly (:mod:`kbench.kafka.merge`).
A worker that leaves the cluster mid-cell fails the repetition with its address; a driver whose
wall clock is off the coordinator's by more than :data:`CLOCK_LIMIT_S`, or producers and consumers
on hosts that do not share a monotonic clock, make end-to-end latency NA with the reason.
See docs/distributed.md.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbench.engine.dask_tasks import clock_now, host_facts, run_driver
from kbench.engine.transports.base import CpuSample, RunRequest, TransportError
from kbench.engine.transports.measure import Jobs, PoolResult, Window, delivered, driver_fill
from kbench.engine.transports.window import Schedule
from kbench.install import pip_install
from kbench.kafka import clients, merge, rdstats
from kbench.model.corpus import lenprefixed_bytes

__all__ = ["CLOCK_LIMIT_S", "ClockReading", "DaskPool", "e2e_invalid_reason", "place"]

#: A driver's wall clock may be off the coordinator's by at most this (beyond the probe's own
#: uncertainty) for end-to-end latency to stand: 1 ms, the same order as the smallest latencies.
CLOCK_LIMIT_S = 1e-3
#: Seconds between the producers' start order and their common start instant.
START_LEAD_S = 2.0
#: Clock probes per worker and cell; the one with the shortest round trip is kept.
CLOCK_PROBES = 5


@dataclass(frozen=True)
class ClockReading:
    """One worker's wall clock against the coordinator's: offset ± uncertainty (half the round trip)."""

    worker: str
    offset_s: float
    uncertainty_s: float

    @property
    def synchronised(self) -> bool:
        return abs(self.offset_s) - self.uncertainty_s <= CLOCK_LIMIT_S


def e2e_invalid_reason(clocks: Sequence[ClockReading], boots: Mapping[str, str], roles: Mapping[str, str]) -> str:
    """Why end-to-end latency cannot stand for this cell ('' when it can).

    ``boots``: worker -> boot id; ``roles``: worker -> "producer"/"consumer"/"both".
    """
    bad = [c for c in clocks if not c.synchronised]
    if bad:
        return "; ".join(
            f"worker {c.worker} clock off the coordinator's by {c.offset_s * 1e3:+.3f} ms "
            f"(±{c.uncertainty_s * 1e3:.3f} ms, limit {CLOCK_LIMIT_S * 1e3:g} ms): not synchronised"
            for c in bad
        )
    sending = {boots[w] for w, r in roles.items() if r in ("producer", "both")}
    receiving = {boots[w] for w, r in roles.items() if r in ("consumer", "both")}
    if len(sending | receiving) > 1:
        return "producers and consumers on hosts with different monotonic clocks (the kb header's send time is CLOCK_MONOTONIC)"
    return ""


def place(workers: Sequence[str], producers: int, consumers: int, per_worker: int) -> list[tuple[str, str]]:
    """(role, worker) per driver: consumers first, then producers, ``per_worker`` drivers per worker."""
    need = producers + consumers
    if len(workers) * per_worker < need:
        raise TransportError(
            f"the cell needs {producers} producer + {consumers} consumer drivers but the Dask scheduler has "
            f"{len(workers)} worker(s) x {per_worker} driver(s); start more workers or raise transport.drivers_per_worker"
        )
    roles = ["consumer"] * consumers + ["producer"] * producers
    ws = sorted(workers)
    return [(r, ws[i // per_worker]) for i, r in enumerate(roles)]


@dataclass
class DaskPool:
    """A connection to a Dask scheduler and the coordinator's per-cell work."""

    address: str
    producers: int = 1
    consumers: int = 1
    per_worker: int = 1
    #: Test hook: seconds added to a worker's measured clock offset (by worker address).
    clock_bias_s: Mapping[str, float] = field(default_factory=dict)
    client: Any = None
    _corpora: dict[str, Any] = field(default_factory=dict)

    def open(self) -> dict[str, Any]:
        """Connect; return every worker's host facts (for the manifest)."""
        try:
            from distributed import Client
        except ImportError:
            raise TransportError(
                f"--workers needs Dask distributed; install it with {pip_install('distributed')}"
            ) from None
        try:
            self.client = Client(self.address, timeout=30, set_as_default=False)
        except (OSError, TimeoutError) as e:
            raise TransportError(f"cannot reach the Dask scheduler at {self.address}: {e}") from None
        facts = self.client.run(host_facts)
        return {"scheduler": self.address, "hosts": facts}

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    def workers(self) -> list[str]:
        """The scheduler's live workers, asked directly (the client's cached identity may be a
        summary without workers)."""
        return sorted(self.client.run_on_scheduler(_worker_addresses))

    def clocks(self, workers: Sequence[str], probes: int = CLOCK_PROBES) -> list[ClockReading]:
        """Each worker's clock offset from the probe with the shortest round trip of ``probes``
        (as NTP does: the shortest round trip bounds the offset most tightly)."""

        def probe(w: str) -> ClockReading:
            a = time.time()
            t = self.client.run(clock_now, workers=[w])[w]
            b = time.time()
            return ClockReading(w, t - (a + b) / 2 + float(self.clock_bias_s.get(w, 0.0)), (b - a) / 2)

        return [
            min((probe(w) for _ in range(max(1, probes))), key=lambda r: r.uncertainty_s) for w in sorted(set(workers))
        ]

    def corpus(self, sha: str, records: Sequence[bytes]) -> Any:
        """The corpus as a length-prefixed blob, sent once to every worker."""
        if sha not in self._corpora:
            blob = lenprefixed_bytes(records)
            self._corpora[sha] = self.client.scatter(blob, broadcast=True, hash=False)
        return self._corpora[sha]

    # ------------------------------------------------------------------ one cell
    def run(self, req: RunRequest, jobs: Jobs, window: Window) -> PoolResult:
        """One repetition on the Dask workers; the broker window spans the whole cell, so its
        payload is the cell's."""
        if jobs.schedule is not None:  # the plan refuses this first (plan_expand.check_local_only)
            raise TransportError(
                "an experiment's own schedule (a catch-up drain) runs on this machine's driver pool, "
                "not on Dask workers; drop transport.workers (--workers) for that sweep"
            )
        window.open()
        window.nic_start()
        # librdkafka@V: the drivers run that version's library (the other clients' drivers are not
        # started on Dask workers: the C driver runs there)
        lib = {"client": req.cell.client} if clients.family(req.cell.client) == "librdkafka" else {}
        out = self.run_cell(
            {**jobs.producer, **lib},  # the rate: each producer's share, added by run_cell
            {**jobs.consumer, **lib} if jobs.consumer is not None else None,
            (req.corpus.sha256, req.corpus.records),
            req.rate,
            jobs.count,
            req.duration_s + 120.0,
        )
        window.nic_end()
        window.close()
        pres = out["producer"]
        co = out["coordinator"]
        return PoolResult(
            producer=pres,
            consumer=out["consumer"],
            client_cpu=tuple(out["cpu"]),
            broker_window_bytes=delivered(pres)[1],
            wire_bytes=out["tx_bytes"],
            client_fill=driver_fill(rdstats.batch_fill(out["stats"], req.topic)) if out.get("stats") else None,
            driver_steal_pct=out["steal_pct"],
            e2e_na=out["e2e_invalid"],
            coordinator=co,
            notes=(
                f"dask: {len(co['drivers'])} drivers, start skew {_ms(co['start_skew_ms'])}, "
                f"collection {_ms(co['collect_ms'])}",
            ),
        )

    def run_cell(
        self,
        producer_job: Mapping[str, Any],
        consumer_job: Mapping[str, Any] | None,
        corpus: tuple[str, Sequence[bytes]],
        rate: float | None,
        count: int,
        timeout: float,
    ) -> dict[str, Any]:
        """Run one repetition; return merged producer/consumer results, CPU rows, hosts, skew."""
        from distributed import Event

        n_cons = self.consumers if consumer_job is not None else 0
        placement = place(self.workers(), self.producers, n_cons, self.per_worker)
        token = secrets.token_hex(6)
        abort = Event(f"kbench-abort-{token}", client=self.client)
        blob = self.corpus(corpus[0], corpus[1])
        futures: dict[Any, tuple[str, str, int]] = {}
        t_order = time.monotonic()

        def submit(role: str, worker: str, i: int, job: Mapping[str, Any], ready: str | None) -> None:
            f = self.client.submit(
                run_driver,
                dict(job, role=role),
                corpus[0] if role == "producer" else None,
                blob if role == "producer" else None,
                abort.name,
                ready,
                timeout,
                key=f"kbench-{role}-{i}-{token}",
                workers=[worker],
                allow_other_workers=False,
                pure=False,
                retries=0,
            )
            futures[f] = (role, worker, i)

        try:
            cons = [(w, i) for i, (r, w) in enumerate(x for x in placement if x[0] == "consumer")]
            prods = [(w, i) for i, (r, w) in enumerate(x for x in placement if x[0] == "producer")]
            # the per-producer split of the request's rate: here only (the jobs and the merge read it)
            prate = (rate / len(prods)) if rate and prods else None
            clocks = self.clocks([w for _, w in placement])
            readies = []
            for w, i in cons:
                assert consumer_job is not None
                ev = Event(f"kbench-ready-{token}-{i}", client=self.client)
                readies.append(ev)
                # several producers: sequence numbers are ranges per producer, so the consumer's
                # latency window falls back to the send-time rule (docs/drivers.md)
                job = consumer_job if len(prods) <= 1 else dict(consumer_job, latency_from_seq=0)
                submit("consumer", w, i, job, ev.name)
            for ev in readies:
                self._wait(futures, ev.is_set, 60.0, "consumer assignment")
            start_at = time.time() + START_LEAD_S
            for (w, i), (base, n) in zip(prods, merge.split_count(count, len(prods)) if count else [], strict=False):
                submit(
                    "producer",
                    w,
                    i,
                    dict(producer_job, rate=prate or 0.0, count=n, seq_base=base, start_at_unix=start_at),
                    None,
                )
            if not count:  # saturated: each for the duration, sequence ranges far apart
                for w, i in prods:
                    submit(
                        "producer", w, i, dict(producer_job, rate=0.0, seq_base=i << 40, start_at_unix=start_at), None
                    )
            self._wait(futures, lambda: all(f.done() for f in futures), timeout + 60.0, "the drivers")
            t_done = time.monotonic()
            outs = self.client.gather(list(futures))
            t_collected = time.monotonic()
        except BaseException:
            abort.set()
            self.client.cancel(list(futures), force=True)
            raise
        finally:
            abort.set()  # every driver of this cell has finished or is told to stop
        sizes = [len(r) for r in corpus[1]]
        return self._merge(outs, clocks, start_at, t_collected - t_done, t_done - t_order, sizes, prate, count)

    def _wait(
        self, futures: Mapping[Any, tuple[str, str, int]], done: Callable[[], bool], limit: float, what: str
    ) -> None:
        """Until ``done()``; a failed driver or a worker that left the cluster raises TransportError."""
        deadline = time.monotonic() + limit
        last_check = 0.0
        while not done():
            for f, (role, w, i) in futures.items():
                if f.status == "error":
                    raise TransportError(f"{role} {i + 1} on Dask worker {w}: {f.exception()}")
            now = time.monotonic()
            if now - last_check > 0.5:
                live = set(self.workers())
                for _f, (role, w, i) in futures.items():
                    if w not in live:
                        raise TransportError(f"Dask worker {w} ({role} {i + 1}) was lost mid-cell")
                last_check = now
            if now > deadline:
                raise TransportError(f"timed out after {limit:.0f} s waiting for {what}")
            time.sleep(0.05)  # a polling interval of the coordinator, not a measurement

    def _merge(
        self,
        outs: Sequence[Mapping[str, Any]],
        clocks: Sequence[ClockReading],
        start_at: float,
        collect_s: float,
        cell_s: float,
        sizes: Sequence[int] = (),
        producer_rate: float | None = None,
        expected: int = 0,
    ) -> dict[str, Any]:
        prods = [o for o in outs if o["role"] == "producer"]
        cons = [o for o in outs if o["role"] == "consumer"]
        t0s = [o["t0_unix"] for o in prods if "t0_unix" in o]
        roles: dict[str, str] = {}
        for o in outs:
            roles[o["worker"]] = o["role"] if roles.get(o["worker"], o["role"]) == o["role"] else "both"
        boots = {o["worker"]: o["host"]["boot_id"] for o in outs}
        payloads = window_payloads(outs, sizes, producer_rate)
        cpu: dict[tuple[str, str], list[tuple[Mapping[str, Any], int | None]]] = {}
        for o, wb in zip(outs, payloads, strict=True):
            cpu.setdefault((o["role"], _host(o["worker"])), []).append((o["result"]["cpu"], wb))
        rows = []
        for (role, host), entries in sorted(cpu.items()):
            cs = [c for c, _ in entries]
            na = any(c.get("usr_s") is None or c.get("sys_s") is None for c in cs)
            usr = None if na else sum(c["usr_s"] for c in cs)
            sys_ = None if na else sum(c["sys_s"] for c in cs)
            wbs = [wb for _, wb in entries]
            notes = [c["note"] for c in cs if c.get("note")]
            if any(wb is None for wb in wbs) and not na:
                notes.append(f"{role}@{host}: payload of its CPU window unknown ({_WINDOW_NA[role]})")
            split = all(c.get("loadgen_s") is not None and c.get("client_s") is not None for c in cs)
            rows.append(
                CpuSample(
                    f"{role}@{host}",
                    usr,
                    sys_,
                    max(float(c.get("wall_s") or 0.0) for c in cs),
                    regressed=(usr or 0) < 0 or (sys_ or 0) < 0,
                    note="; ".join(notes),
                    loadgen_s=sum(c["loadgen_s"] for c in cs) if split else None,
                    client_s=sum(c["client_s"] for c in cs) if split else None,
                    window_payload_bytes=None if any(wb is None for wb in wbs) else sum(int(wb or 0) for wb in wbs),
                )
            )
        stats = [o.get("stats") or {} for o in prods]
        first_stats = next((s for s in stats if s), None)
        steals = [o["steal_pct"] for o in outs if o.get("steal_pct") is not None]
        return {
            "producer": merge.merge_producers([o["result"] for o in prods]),
            "consumer": merge.merge_consumers([o["result"] for o in cons], expected) if cons else None,
            "cpu": rows,
            "tx_bytes": sum(int(s["tx_bytes"]) for s in stats)
            if stats and all("tx_bytes" in s for s in stats)
            else None,
            "steal_pct": max(steals) if steals else None,
            "stats": first_stats,
            "e2e_invalid": e2e_invalid_reason(clocks, boots, roles) if cons else "",
            "coordinator": {
                "start_skew_ms": (max(t0s) - min(t0s)) * 1e3 if t0s else None,
                "start_late_ms": (max(t0s) - start_at) * 1e3 if t0s else None,
                "collect_ms": collect_s * 1e3,
                "cell_s": cell_s,
                "clocks": [vars(c) for c in clocks],
                "drivers": [
                    {"role": o["role"], "worker": o["worker"], "host": o["host"], "steal_pct": o.get("steal_pct")}
                    for o in outs
                ],
            },
        }


_WINDOW_NA = {
    "producer": "the producer reported no window start or schedule",
    "consumer": "a consumer on a host whose monotonic clock is not the producers' cannot place its window "
    "on their schedule",
}


def _schedule(sizes: Sequence[int], r: Mapping[str, Any], rate: float | None) -> Schedule | None:
    """One producer's schedule on its own host's monotonic clock (transports/window.py)."""
    t0 = r.get("t0_ns") if rate else r.get("first_send_ns")
    if not sizes or t0 is None or r.get("last_send_ns") is None:
        return None
    return Schedule.of(sizes, int(r["sent"]), int(r["delivered"]), int(t0), int(r["last_send_ns"]), rate)


def window_payloads(
    outs: Sequence[Mapping[str, Any]], sizes: Sequence[int], producer_rate: float | None
) -> list[int | None]:
    """Payload of each driver's own CPU window (main's one-window rule, docs/distributed.md).

    A producer's window is on its own schedule (each producer cycles the corpus from record 0).
    A consumer reads every producer's records: its window (shifted back by its median e2e
    latency) is placed on each producer's schedule and summed, only when every producer runs on
    the consumer's host (same boot id, so the same CLOCK_MONOTONIC); otherwise None.  A member
    of a consumer group (its result has ``parts``) reads a share: that sum times its share of the
    group's bytes."""
    prods = [
        (o["host"]["boot_id"], _schedule(sizes, o["result"], producer_rate)) for o in outs if o["role"] == "producer"
    ]
    out: list[int | None] = []
    group_bytes = sum(int(o["result"].get("bytes") or 0) for o in outs if o["role"] == "consumer")
    for o in outs:
        start = (o["result"].get("cpu") or {}).get("window_start_ns")
        if start is None:
            out.append(None)
        elif o["role"] == "producer":
            sched = _schedule(sizes, o["result"], producer_rate)
            out.append(None if sched is None else sched.window_payload(int(start)))
        else:
            e2e = o["result"].get("e2e") or {}
            lag = int(float(e2e["p50_us"]) * 1000) if e2e.get("count") else 0
            boot = o["host"]["boot_id"]
            if not prods or any(b != boot or sc is None for b, sc in prods):
                out.append(None)
            else:
                fan_out = sum(sc.window_payload(int(start), lag) for _, sc in prods if sc is not None)
                if o["result"].get("parts") is not None:  # a group member reads its share of every record
                    share = int(o["result"].get("bytes") or 0) / group_bytes if group_bytes else 0.0
                    fan_out = int(fan_out * share)
                out.append(fan_out)
    return out


def _worker_addresses(dask_scheduler: Any) -> list[str]:
    """Run on the scheduler: the addresses of the workers it knows now."""
    return list(dask_scheduler.workers)


def _host(address: str) -> str:
    """The host of a Dask worker address (tcp://10.0.0.5:40123 -> 10.0.0.5)."""
    return address.split("://", 1)[-1].rsplit(":", 1)[0]


def _ms(v: float | None) -> str:
    return "NA" if v is None else f"{v:.3f} ms"
