"""Run the programs of all N ranks of a collective job together in one process: each rank in its own thread, scope
and Executor, up to its next collective op, where the ranks of the op's group (ring_id) meet and exchange values.

    values = run_ranks([rank0, rank1], feeds=[feed0, feed1], fetch_list=["loss"], scopes=[scope0, scope1])

A collective is a rendezvous: the k-th collective a rank runs on a ring meets the k-th of every other member.
A point-to-point op (send_v2, recv_v2, ...: it has a ``peer``, the other rank's place in the ring) does not wait
for a send: the k-th receive from a rank on a ring takes the k-th value that rank sent to it there.
A rank that fails, finishes without reaching a collective its peers wait in, or reaches another op type there ends
the run with one error naming the op. When every rank still running waits and none can go on (two receives waiting
for each other, a collective one rank never reaches while it waits elsewhere), the run stops at once (Deadlock),
naming where each rank waits and for what. Run alone (no job), a collective over a group of one is exactly defined;
one whose group has more ranks fails, saying the others are missing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

from ..errors import ExecutionError, GradcError
from ..ir import Program
from . import randomness

_local = threading.local()


class RankAbandoned(ExecutionError):
    """A rank stopped because another one failed: the other failure is the one to report."""


class Deadlock(ExecutionError):
    """Every rank still running waits for another one: the message says where each waits and for what."""


class Job:
    """The rendezvous of N ranks; ``rings``: ring_id -> the ranks of its group, in group order (default: all), or
    a list of groups (a ring_id names a communicator of each process: ranks of different groups may share one, as
    auto-parallel's data- and model-parallel groups of a 2-D mesh do); ``pairs``: the same for point-to-point ops
    on rings ``rings`` does not name (pair_rings)."""

    def __init__(self, nranks: int, rings: Mapping[int, Sequence] | None = None,
                 pairs: Mapping[int, Sequence[int]] | None = None):
        self.nranks, self.rings = nranks, {ring: _groups(members) for ring, members in (rings or {}).items()}
        self.pairs = {ring: list(members) for ring, members in (pairs or {}).items() if ring not in self.rings}
        self._cond = threading.Condition()
        self._seen: dict[tuple[int, int], int] = {}   # (ring, rank) -> collectives it has run on the ring
        self._meetings: dict[tuple[int, int], dict] = {}   # (ring, k) -> {rank: (op, value)}, dropped once read
        self._reads: dict[tuple[int, int], int] = {}
        self._mail: dict[tuple[int, int, int], list] = {}   # (ring, sender, receiver) -> values sent, not yet taken
        self._waiting: dict[int, tuple[Callable[[], bool], Callable[[], str]]] = {}   # rank -> (done?, what)
        self.finished: set[int] = set()
        self.failure: str | None = None

    def members(self, ring: int, rank: int | None = None) -> list[int]:
        """The ranks of ``rank``'s group on ``ring`` (its first group when ``rank`` is in none or not given)."""
        groups = self.rings.get(ring, [list(range(self.nranks))])
        return next((group for group in groups if rank in group), groups[0])

    def exchange(self, rank: int, ring: int, op_type: str, where: str, value) -> list:
        """Every member's value of this collective (op ``op_type`` at ``where``), in group order, once all have
        reached it."""
        members = self.members(ring, rank)
        if rank not in members:
            raise ValueError(f"rank {rank} is not in the group of ring_id {ring} (ranks {members})")
        return self.meet(rank, ring, members, op_type, where, value)

    def meet(self, rank: int, ring, members: list[int], op_type: str, where: str, value) -> list:
        """exchange's rendezvous on a communicator ``ring`` (a ring_id, or any key naming a group) of ``members``."""
        with self._cond:
            seen = self._seen.get((ring, rank), 0)
            self._seen[(ring, rank)], key = seen + 1, (ring, members[0], seen)
            meeting = self._meetings.setdefault(key, {})
            meeting[rank] = (op_type, where, value)
            self._cond.notify_all()

            def missing() -> list[int]:
                return [m for m in members if m not in meeting]

            def gone() -> list[int]:
                return [m for m in missing() if m in self.finished]

            self._wait(rank, lambda: not missing() or bool(gone()),
                       lambda: f"{where} waits for rank(s) {missing()} in collective {seen + 1} on ring_id {ring}")
            if gone():
                raise ValueError(f"rank(s) {gone()} finished their program without reaching this collective "
                                 f"(ring_id {ring}, collective {seen + 1} of rank {rank})")
            if len({kind for kind, _, _ in meeting.values()}) > 1:
                listing = ", ".join(f"rank {m}: {meeting[m][1]}" for m in members)
                raise ValueError(f"the ranks reached different collectives on ring_id {ring}: {listing}")
            values = [meeting[m][2] for m in members]
            self._reads[key] = self._reads.get(key, 0) + 1
            if self._reads[key] == len(members):
                del self._meetings[key], self._reads[key]
            return values

    def peer(self, rank: int, ring: int, place: int) -> int:
        """The rank at ``place`` in the group of ``ring``, checked to be another rank of it than ``rank``."""
        members = self.pairs.get(ring) or self.members(ring, rank)
        if rank not in members or not 0 <= place < len(members) or members[place] == rank:
            raise ValueError(f"peer {place} is no other rank of ring_id {ring}'s group {members} (this is rank {rank})")
        return members[place]

    def send(self, rank: int, ring: int, place: int, value) -> None:
        self.post(rank, ring, self.peer(rank, ring, place), value)

    def post(self, rank: int, ring, receiver: int, value) -> None:
        """Hand ``value`` to rank ``receiver`` on ``ring`` (a ring_id, or any key naming a channel); never waits."""
        with self._cond:
            self._mail.setdefault((ring, rank, receiver), []).append(value)
            self._cond.notify_all()

    def receive(self, rank: int, ring: int, place: int, where: str):
        """The next value the rank at ``place`` of ring's group sent this rank (op at ``where``); waits for it."""
        return self.take(rank, ring, self.peer(rank, ring, place), where)

    def take(self, rank: int, ring, sender: int, where: str):
        """The next value rank ``sender`` posted this rank on ``ring``; waits for it."""
        with self._cond:
            box = self._mail.setdefault((ring, sender, rank), [])
            self._wait(rank, lambda: bool(box) or sender in self.finished,
                       lambda: f"{where} waits for a value from rank {sender} on ring_id {ring}")
            if not box:
                raise ValueError(f"rank {sender} finished its program without sending what this op receives "
                                 f"(ring_id {ring})")
            return box.pop(0)

    def _wait(self, rank: int, done: Callable[[], bool], what: Callable[[], str]) -> None:
        """Wait (holding the lock) until done(); raise Deadlock once every running rank waits and none is done."""
        self._waiting[rank] = (done, what)
        try:
            while self.failure is None and not done():
                running = [r for r in range(self.nranks) if r not in self.finished]
                if all(r in self._waiting and not self._waiting[r][0]() for r in running):
                    raise Deadlock("deadlock: every running rank waits and none can go on: " + "; ".join(
                        f"rank {r} at {self._waiting[r][1]()}" for r in running))
                self._cond.wait()
        finally:
            del self._waiting[rank]
        if self.failure is not None:   # another rank failed: its error is the one to report
            raise RankAbandoned(f"rank {rank} stopped: {self.failure}")

    def end(self, rank: int, failure: str | None) -> None:
        with self._cond:
            self.finished.add(rank)
            if failure is not None and self.failure is None:
                self.failure = failure
            self._cond.notify_all()


def current() -> tuple[Job, int] | None:
    """(the job, this thread's rank) while run_ranks runs this thread's program; None run alone."""
    return getattr(_local, "rank", None)


def ring_size(program: Program, ring: int) -> int:
    """The group size the program's ops on ``ring`` state (their nranks attributes), 1 if none does."""
    return max((op.attrs["nranks"] for block in program.blocks for op in block.ops
                if "nranks" in op.attrs and op.attrs.get("ring_id", 0) == ring), default=1)


def _groups(members: Sequence) -> list[list[int]]:
    """A ring's groups: a list of ranks is one group."""
    members = list(members)
    return [list(group) for group in members] if members and not isinstance(members[0], int) else [members]


def pair_rings(programs: Sequence[Program]) -> dict[int, list[int]]:
    """The group of each ring whose point-to-point ops exactly two ranks hold (Paddle's pipeline pass writes a ring
    a pair of stages and a direction), in the order their ``peer`` attributes say."""
    users: dict[int, dict[int, int]] = {}   # ring -> rank -> the peer its first point-to-point op there names
    for rank, program in enumerate(programs):
        for op in (op for block in program.blocks for op in block.ops if "peer" in op.attrs):
            users.setdefault(op.attrs.get("ring_id", 0), {}).setdefault(rank, op.attrs["peer"])
    rings = {}
    for ring, peers in users.items():
        if len(peers) == 2:
            (first, peer), (second, _) = peers.items()
            if peer in (0, 1):
                rings[ring] = [first, second] if peer == 1 else [second, first]
    return rings


def run_ranks(programs: Sequence[Program], feeds: Sequence[Mapping] | None = None,
              fetch_list: Sequence[str] | Sequence[Sequence[str]] | None = None, scopes: Sequence | None = None,
              rings: Mapping[int, Sequence] | None = None, seed=None, micro_batches: int = 1,
              seed_generators: Sequence[Mapping[str, int]] | None = None, schedule: str = "fthenb",
              schedule_steps: Sequence[list] | None = None) -> list[list]:
    """Run rank r's program with feeds[r] in scopes[r] (new scopes when None), all ranks together; return each
    rank's fetched values. ``fetch_list``: one list for every rank, or a list per rank. ``rings``: ring_id -> its
    ranks in group order, or a list of such groups (default: every rank; for a ring of two ranks' point-to-point
    ops, as their peers say).
    Each rank's random ops draw from its own streams: seeded with ``seed`` on every rank (what paddle.seed(seed) on
    every rank does, as fleet's model_parallel_random_seed seeds Paddle's global generator), a list of one seed a
    rank, or fresh entropy (None); ``seed_generators``: each rank's named generators (name -> seed) its seed ops with
    deterministic=True draw from. ``micro_batches`` > 1: each rank's program is a pipeline stage run over that many
    micro-batches of its feed as Paddle's SectionWorker does (gradc.executor.micro_batches), rank r as stage r of
    len(programs), in the ``schedule``'s order ("fthenb", "1f1b" or "vpp": interleaved chunks); each fetched value
    is then a list, one a micro-batch; ``schedule_steps``, a list per rank, gets each rank's (phase, micro-batch,
    live bytes) steps."""
    from .executor import Executor
    from .micro_batches import run_micro_batches
    from .reshard import for_rank, holds_reshard
    from .scope import Scope

    count = len(programs)
    feeds = list(feeds) if feeds is not None else [{}] * count
    scopes = list(scopes) if scopes is not None else [Scope() for _ in range(count)]
    fetches = list(fetch_list or [])
    per_rank = fetches if fetches and not isinstance(fetches[0], str) else [fetches] * count
    if not (len(feeds) == len(scopes) == len(per_rank) == count):
        raise GradcError(f"run_ranks: {count} program(s) need as many feeds, scopes and fetch lists, got "
                         f"{len(feeds)}, {len(scopes)} and {len(per_rank)}")
    seeds = list(seed) if isinstance(seed, (list, tuple)) else [seed] * count
    named = list(seed_generators) if seed_generators is not None else [{}] * count
    if len(seeds) != count or len(named) != count:
        raise GradcError(f"run_ranks: {count} program(s) need as many seeds and seed_generators, got {len(seeds)} "
                         f"and {len(named)}")
    steps = list(schedule_steps) if schedule_steps is not None else [None] * count
    if len(steps) != count:
        raise GradcError(f"run_ranks: {count} program(s) need as many schedule_steps lists, got {len(steps)}")
    programs = [for_rank(program, rank) if holds_reshard(program) else program for rank, program in enumerate(programs)]
    job = Job(count, rings, pairs=pair_rings(programs))
    results, errors = [None] * count, [None] * count

    def run(rank: int) -> None:
        _local.rank = (job, rank)
        randomness.own_streams(seeds[rank], named[rank])
        try:
            if micro_batches > 1:
                results[rank] = run_micro_batches(Executor(), programs[rank], feeds[rank], list(per_rank[rank]),
                                                  scopes[rank], micro_batches, schedule, rank, count, steps[rank])
            else:
                results[rank] = Executor().run(programs[rank], feed=feeds[rank], fetch_list=list(per_rank[rank]),
                                               scope=scopes[rank])
        except Exception as exc:  # noqa: BLE001 - reported by the caller's thread, naming the rank
            errors[rank] = exc
            job.end(rank, f"rank {rank} failed" if isinstance(exc, RankAbandoned) else f"rank {rank}: {exc}")
        else:
            job.end(rank, None)

    threads = [threading.Thread(target=run, args=(rank,), name=f"gradc-rank{rank}") for rank in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    first = next((rank for rank, exc in enumerate(errors) if exc is not None and not isinstance(exc, RankAbandoned)),
                 None)
    if first is not None:
        exc = errors[first]
        if isinstance(exc, GradcError) and not isinstance(exc, Deadlock):   # the CLI's one line, naming the rank
            raise ExecutionError(f"rank {first}: {exc}") from exc
        raise exc
    return results
