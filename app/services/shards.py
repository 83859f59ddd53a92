"""The IndexPool reader over shards: the library's documents spread over N ranks of ``torch.distributed`` (gloo on
CPUs), each rank holding the indexes of its own documents. A question is answered by every rank at once, and the
answer is the one a single process holding every document gives.

    group = ShardGroup.spawn(library, indexes, shards=2)  # `serve --shards 2`: rank 0 here, ranks 1.. as processes
    group = ShardGroup.from_env(library, indexes)   # rank 0 under torchrun (`serve --torchrun`); the others: worker()
    services.ask.use_shards(group)               # the IndexPool reader asks over the group
    group.close()

Documents go to ranks by size (:func:`assign`): in the order they were ingested, each to the rank holding the fewest
tokens so far, so a new document goes to the lightest rank and none moves while none is removed. Every rank reads
the same library home (one machine's disk, or a shared file system between machines): the documents' indexes are
built once, in the home, by rank 0 (``IndexService``), and each rank loads those of its own documents.

A question, on rank 0 (the app): it posts the question in the group's store (a ``TCPStore``) with each rank's
documents, and waits until every rank has loaded its part, watching each rank's heartbeat; then all ranks run the
same steps (``_answer_part``): encode the question over their part, summing the collection-wide statistics with one
all-reduce each (which words name a document, word and piece frequencies, each term's mean and deviation:
``model.inference.qa.Total``), so that every passage's score is the one it has in the whole collection; each rank
runs its question-time read over its part; rank 0 merges the ranks' best passages (``model.inference.qa.Cited``) in
the collection's order, with a round more for every rank only when one rank's candidates run out. A rank that dies gives
an error at once, one that stalls after ``timeout`` seconds; the group is then closed, and every later question says
so (restart the app). The read term's weight is 0 in the shipped checkpoint: each rank's read is over its own part.
"""

from __future__ import annotations

import contextlib
import datetime
import heapq
import itertools
import logging
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from app.services.errors import UserError
from app.services.indexes import IndexService, cache_key
from storage.library import Library

if TYPE_CHECKING:
    from model.inference.qa import Cited
    from model.network.checkpoint import Model

DEFAULT_TIMEOUT_S = 20.0  # a rank silent this long has stalled
HEARTBEAT_S = 1.0
STOP = b"stop"  # posted in place of a question: the ranks end
log = logging.getLogger(__name__)


def assign(sizes: Sequence[tuple[int, int]], ranks: int) -> dict[int, int]:
    """The rank of each document: ``sizes`` (document id, tokens) oldest first, each to the rank holding the fewest
    tokens so far (the lower rank on a tie).  → {document id: rank}"""
    load = [(0, rank) for rank in range(ranks)]
    plan = {}
    for document_id, tokens in sizes:
        held, rank = heapq.heappop(load)
        plan[document_id] = rank
        heapq.heappush(load, (held + max(tokens, 1), rank))
    return plan


class ShardError(UserError):
    """A rank died or stalled: the group is closed."""


class _Comm:
    """The collectives of a question over a gloo process group: sums, and Python objects gathered from every rank."""

    def __init__(self, group: dist.ProcessGroup, rank: int, size: int, timeout_s: float) -> None:
        self.group, self.rank, self.size = group, rank, size
        self.timeout = datetime.timedelta(seconds=timeout_s)  # of each collective: a rank this late has stalled

    def total(self, x: torch.Tensor) -> torch.Tensor:
        """The float64 sum of ``x`` over the ranks (``model.inference.qa.Total``)."""
        summed = x.detach().to(torch.float64).contiguous().clone()
        self.group.allreduce(summed, timeout=self.timeout).wait()
        return summed

    def gather(self, value: Any) -> list[Any]:
        """Every rank's ``value``, in rank order (on every rank)."""
        data = torch.frombuffer(bytearray(pickle.dumps(value)), dtype=torch.uint8)
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(self.size)]
        self.group.allgather(sizes, torch.tensor([data.numel()]), timeout=self.timeout).wait()
        longest = max(int(s) for s in sizes)
        padded = torch.zeros(longest, dtype=torch.uint8)
        padded[: data.numel()] = data
        out = [torch.zeros(longest, dtype=torch.uint8) for _ in range(self.size)]
        self.group.allgather(out, padded, timeout=self.timeout).wait()
        return [pickle.loads(o[: int(s)].numpy().tobytes()) for o, s in zip(out, sizes, strict=True)]


@dataclass
class Request:
    """What rank 0 posts for a question: the same for every rank but ``entries``, each rank's documents."""

    question: str
    top_k: int  # candidates each rank sends per round: as many as the answer cites
    user: str
    settings: dict[str, Any]  # the user's cache settings (tier 1's configuration, tier 2's budget)
    entries: list[list[tuple[str, int, str]]]  # per rank: (collection, document id, content hash)


@dataclass
class Part:
    """A rank's side of a question: its ranked citations and its read's figures."""

    stream: Iterator[Cited]
    batch: int  # candidates per round
    names_document: bool
    read: dict[str, Any] = field(default_factory=dict)


def _answer_part(indexes: IndexService, model: Model, request: Request, comm: _Comm) -> Part:
    """Encode the question over this rank's documents and rank its passages (both summed with the other ranks')."""
    from model.inference.qa import CollectionIndex, Question, cited, read
    from model.inference.read import ReadResult, read_figures
    from model.network.indexpool.cache import TierStats

    entries = request.entries[comm.rank]
    index = indexes.index(model, entries) if entries else CollectionIndex.empty(model)
    question = Question.encode(model, request.question, index, comm.total)
    stats: dict[str, Any] = {}
    reading = None
    if entries:
        cache = indexes.read_cache(model, entries, request.user)
        reading = read(model, index, cache, question)
        stats = read_figures(reading, cache)
    if model.weights.read == 0:
        reading = None  # no term: the same on every rank, which sum the same statistics
    elif reading is None:
        reading = ReadResult(torch.zeros(0), 0, TierStats(), {})
    return Part(cited(model, index, question, reading), request.top_k, question.names_document, stats)


def _first_round(part: Part, comm: _Comm) -> tuple[list[dict[str, Any]], list[list[Cited]]]:
    """Every rank: its read's figures and its first candidates, gathered (the passages are scored here)."""
    gathered = comm.gather((part.read, list(itertools.islice(part.stream, part.batch))))
    return [figures for figures, _ in gathered], [batch for _, batch in gathered]


def _send_rounds(part: Part, comm: _Comm) -> None:
    """Ranks 1..N-1: after the first round, send the next candidates for as long as rank 0 asks for more."""
    while comm.total(torch.zeros(1))[0] > 0:
        comm.gather(list(itertools.islice(part.stream, part.batch)))


def _merge(part: Part, comm: _Comm, buffers: list[list[Cited]]) -> Iterator[Cited]:
    """Rank 0: the ranks' candidates merged in the collection's order (``Cited.order``), a round more whenever a
    rank's candidates run out before its stream did; closing it ends the rounds (unless a collective failed)."""
    done = [len(b) < part.batch for b in buffers]
    positions = [0] * comm.size
    failed = False
    try:
        while True:
            heads = [(b[i].order, r) for r, (b, i) in enumerate(zip(buffers, positions, strict=True)) if i < len(b)]
            short = [r for r in range(comm.size) if positions[r] >= len(buffers[r]) and not done[r]]
            if short:  # one more round, for every rank
                comm.total(torch.ones(1))
                more = comm.gather(list(itertools.islice(part.stream, part.batch)))
                for r, batch in enumerate(more):
                    buffers[r] = buffers[r][positions[r] :] + batch
                    positions[r] = 0
                    done[r] = done[r] or len(batch) < part.batch
                continue
            if not heads:
                return
            _, r = min(heads)
            positions[r] += 1
            yield buffers[r][positions[r] - 1]
    except (RuntimeError, dist.DistError):
        failed = True  # a rank died or stalled: no collective can end the rounds
        raise
    finally:
        if not failed:
            comm.total(torch.zeros(1))  # no more rounds


class ShardGroup:
    """Rank 0's side: the process group, the store, and the ranks it started (``spawn``)."""

    def __init__(
        self,
        library: Library,
        indexes: IndexService,
        store: dist.TCPStore,
        comm: _Comm,
        timeout_s: float,
        processes: Sequence[subprocess.Popen] = (),
    ) -> None:
        self.library, self.indexes, self.store, self.comm = library, indexes, store, comm
        self.timeout_s = timeout_s
        self.processes = list(processes)
        self.size = comm.size
        self._lock = threading.Lock()  # one question at a time: the ranks run its steps in lockstep
        self._asked = 0
        self.broken: str | None = None  # why the group is closed
        self._plan: dict[int, int] = {}  # document id → rank, as of the last question
        self._built: set[tuple[int, str, str]] = set()  # (document id, content hash, cache settings) in the home
        indexes.holds = lambda document_id: self._plan.get(document_id) == 0  # rank 0 keeps its own documents alone

    # ------------------------------------------------------------------ starting

    @classmethod
    def spawn(
        cls, library: Library, indexes: IndexService, shards: int, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> ShardGroup:
        """Rank 0 in this process and ranks 1..shards-1 as processes of this machine (``serve --torchrun``)."""
        if shards < 2:
            raise UserError(f"--shards must be at least 2, got {shards}")
        port = _free_port()
        environment = os.environ | {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(shards)}
        environment.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # not c10d's notes on every wait
        environment.setdefault("OMP_NUM_THREADS", str(threads_per_rank(shards)))  # `serve` gives rank 0 as many
        processes = [
            subprocess.Popen(
                [sys.executable, "-m", "app.cli", "--home", str(library.home), "serve", "--torchrun"]
                + ["--shard-timeout", str(timeout_s)],
                env=environment | {"RANK": str(rank)},
            )
            for rank in range(1, shards)
        ]
        try:
            return cls._join(library, indexes, "127.0.0.1", port, shards, timeout_s, processes)
        except BaseException:
            for process in processes:
                process.kill()
            raise

    @classmethod
    def from_env(cls, library: Library, indexes: IndexService, timeout_s: float = DEFAULT_TIMEOUT_S) -> ShardGroup:
        """Rank 0 of a group started by torchrun (RANK 0, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)."""
        address, port, size = _env()
        if int(os.environ.get("RANK", "0")) != 0:
            raise UserError("ShardGroup.from_env runs on rank 0; the other ranks run shards.worker")
        return cls._join(library, indexes, address, port, size, timeout_s)

    @classmethod
    def _join(
        cls,
        library: Library,
        indexes: IndexService,
        address: str,
        port: int,
        size: int,
        timeout_s: float,
        processes: Sequence[subprocess.Popen] = (),
    ) -> ShardGroup:
        store, group = _connect(address, port, 0, size, startup_s=max(120.0, timeout_s))
        return cls(library, indexes, store, _Comm(group, 0, size, timeout_s), timeout_s, processes)

    def close(self, wait_s: float = 5.0) -> None:
        """Ask the ranks to stop, and end those this process started (killed after ``wait_s``)."""
        with contextlib.suppress(Exception):
            self.store.set(f"ask/{self._asked + 1}", STOP)  # what the ranks wait for next
        for process in self.processes:
            try:
                process.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                process.kill()

    # ------------------------------------------------------------------ asking

    @contextlib.contextmanager
    def question(
        self, model: Model, question: str, entries: Sequence[tuple[str, int, str]], user: str, top_k: int
    ) -> Iterator[tuple[Iterator[Cited], bool, dict[str, Any]]]:
        """``question`` over the selection ``entries``, asked of every rank: (the merged citations, best first, to
        read as many of as wanted inside the block — each rank sends ``top_k`` per round; whether the question
        names a document; the read's figures summed over the ranks). ShardError when a rank dies or stalls."""
        with self._lock:
            if self.broken is not None:
                raise ShardError(f"the shard group is closed ({self.broken}): restart `indexpool serve`")
            self._plan = assign(self.library.document_sizes(), self.size)
            settings = dict(self.indexes.settings_of(user))
            built = {(document_id, content_hash, cache_key(settings)) for _, document_id, content_hash in entries}
            self.indexes.build([document_id for document_id, _, _ in built - self._built], user=user)  # in the home
            self._built |= built
            per_rank: list[list[tuple[str, int, str]]] = [[] for _ in range(self.size)]
            for entry in entries:
                per_rank[self._plan.get(entry[1], 0)].append(entry)
            request = Request(question, top_k, user, settings, per_rank)
            self._asked += 1
            asked = self._asked
            try:
                self.store.set(f"ask/{asked}", pickle.dumps(request))
                self._wait_ready(asked)
                part = _answer_part(self.indexes, model, request, self.comm)
                figures, buffers = _first_round(part, self.comm)
                with contextlib.closing(_merge(part, self.comm, buffers)) as stream:
                    yield stream, part.names_document, _summed(figures)
            except (RuntimeError, dist.DistError, TimeoutError) as error:
                self.broken = _why(error, self.processes)
                log.error("shard group closed: %s", self.broken)
                self.close(wait_s=0)  # the ranks left are stalled or waiting on the dead one
                raise ShardError(
                    f"a shard failed during the question: {self.broken}; the shard group is closed: restart"
                    " `indexpool serve`"
                ) from error

    def _wait_ready(self, asked: int) -> None:
        """Wait until every rank has its part of question ``asked`` loaded; TimeoutError when one stops beating."""
        beats = {rank: (self._beat(rank), time.monotonic()) for rank in range(1, self.size)}
        waiting = set(beats)
        pause = 0.001
        while waiting:
            for rank in list(waiting):
                if self.store.check([f"ready/{asked}/{rank}"]):
                    failure = self.store.get(f"ready/{asked}/{rank}").decode()
                    if failure:
                        raise TimeoutError(f"rank {rank} could not load its documents: {failure}")
                    waiting.discard(rank)
                    continue
                beat = self._beat(rank)
                if beat != beats[rank][0]:
                    beats[rank] = (beat, time.monotonic())
                elif time.monotonic() - beats[rank][1] > self.timeout_s:
                    raise TimeoutError(f"rank {rank} stopped answering ({self.timeout_s:g} s without a heartbeat)")
            for process in self.processes:
                if process.poll() is not None:
                    raise TimeoutError(f"a rank's process ended (exit status {process.returncode})")
            time.sleep(pause)
            pause = min(2 * pause, 0.02)  # ready in a few ms when its documents are in memory
        self.store.set(f"go/{asked}", b"1")

    def _beat(self, rank: int) -> int:
        return self.store.add(f"alive/{rank}", 0)


def _summed(figures: list[dict[str, Any]]) -> dict[str, Any]:
    """The read's figures of every rank as one (the app's ``Answer.read``)."""
    summed: dict[str, Any] = {}
    for rank_figures in figures:
        for name, value in rank_figures.items():
            if name == "compressed":
                summed[name] = summed.get(name, True) and value
            elif name not in ("tier2_hit_rate", "device"):
                summed[name] = summed.get(name, 0) + value
    found = summed.get("tier2_hits", 0) + summed.get("tier2_misses", 0)
    summed["tier2_hit_rate"] = round(summed.get("tier2_hits", 0) / found, 4) if found else 0.0
    summed["device"] = "cpu"
    summed["shards"] = len(figures)
    return summed


def threads_per_rank(ranks: int) -> int:
    """This machine's cores shared out between ``ranks`` ranks (each stepping in lockstep with the others)."""
    return max(1, (os.cpu_count() or 1) // ranks)


def _why(error: BaseException, processes: Sequence[subprocess.Popen]) -> str:
    for process in processes:  # a rank killed a moment ago: let its end be seen
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.5)
    ended = [f"rank {i + 1} exited with status {p.returncode}" for i, p in enumerate(processes) if p.poll() is not None]
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    if "Connection closed by peer" in text or "Connection reset" in text:
        text = "a rank closed its connection (its process ended)"
    elif "Timed out" in text or "timed out" in text.lower():
        text = "a rank did not answer in time (stalled)"
    return "; ".join([text, *ended])


# ---------------------------------------------------------------------- the other ranks


def worker(home: Path | None, timeout_s: float = DEFAULT_TIMEOUT_S) -> int:
    """Rank 1..N-1 (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the environment): answer rank 0's questions over
    this rank's documents until rank 0 stops."""
    from model.network.checkpoint import load_model

    address, port, size = _env()
    rank = int(os.environ["RANK"])
    store, group = _connect(address, port, rank, size, startup_s=max(120.0, timeout_s))
    comm = _Comm(group, rank, size, timeout_s)
    beating = threading.Event()
    threading.Thread(target=_heartbeat, args=(address, port, rank, beating), daemon=True).start()
    library = Library(home)
    indexes = IndexService(library)
    model = load_model()
    for asked in itertools.count(1):
        if not _wait_key(store, f"ask/{asked}") or (posted := store.get(f"ask/{asked}")) == STOP:
            return 0
        request: Request = pickle.loads(posted)
        failure = ""
        try:
            for _, document_id, content_hash in request.entries[rank]:
                indexes.document_index(model, document_id, content_hash)
        except Exception as error:  # reported by rank 0 as this rank's failure
            failure = str(error) or type(error).__name__
        store.set(f"ready/{asked}/{rank}", failure.encode())
        if failure or not _wait_key(store, f"go/{asked}"):
            return 1 if failure else 0
        indexes.settings_of = lambda user, settings=request.settings: settings
        try:
            part = _answer_part(indexes, model, request, comm)
            _first_round(part, comm)
            _send_rounds(part, comm)
        except (RuntimeError, dist.DistError) as error:  # another rank died or stalled: rank 0 reports it
            print(f"indexpool: shard rank {rank}: the group failed: {str(error).splitlines()[0]}", file=sys.stderr)
            return 1
    return 0


def _wait_key(store: dist.TCPStore, key: str) -> bool:
    """Wait for ``key``, however long; False when rank 0 went away."""
    while True:
        try:
            store.wait([key], datetime.timedelta(minutes=10))
            return True
        except dist.DistStoreError:  # waited ten minutes: wait on
            continue
        except dist.DistError:
            return False


def _heartbeat(address: str, port: int, rank: int, stop: threading.Event) -> None:
    """Count this rank's heartbeat in the store, every HEARTBEAT_S (rank 0 watches it while the rank loads)."""
    store = dist.TCPStore(address, port + 1, is_master=False, timeout=datetime.timedelta(seconds=30))
    while not stop.wait(HEARTBEAT_S):
        try:
            store.add(f"alive/{rank}", 1)
        except dist.DistError:
            return


def _connect(
    address: str, port: int, rank: int, size: int, startup_s: float
) -> tuple[dist.TCPStore, dist.ProcessGroup]:
    """The group's store (served by rank 0 at ``port`` + 1) and its gloo process group, the ranks given
    ``startup_s`` to join (a rank starting on a busy machine imports torch first); each collective has its own
    timeout (``_Comm``)."""
    try:
        store = dist.TCPStore(
            address,
            port + 1,
            size if rank == 0 else None,
            rank == 0,
            timeout=datetime.timedelta(seconds=startup_s),
            wait_for_workers=False,
        )
        group = dist.ProcessGroupGloo(
            dist.PrefixStore("gloo", store), rank, size, datetime.timedelta(seconds=startup_s)
        )
    except (RuntimeError, dist.DistError) as error:
        raise UserError(
            f"could not form the shard group at {address}:{port + 1}: {str(error).splitlines()[0]}"
        ) from error
    return store, group


def _env() -> tuple[str, int, int]:
    try:
        return os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), int(os.environ["WORLD_SIZE"])
    except (KeyError, ValueError) as error:
        raise UserError(
            f"the shard group needs MASTER_ADDR, MASTER_PORT and WORLD_SIZE (torchrun sets them): {error}"
        ) from error


def _free_port() -> int:
    """A free TCP port p on this machine such that p + 1 is free as well (the group's store)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        with socket.socket() as probe, contextlib.suppress(OSError):
            probe.bind(("127.0.0.1", port + 1))
            return port
    raise UserError("found no free port pair for the shard group")
