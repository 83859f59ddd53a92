"""Worker process of :func:`ingest.pipeline.parse_items_isolated`.

``python -m ingest.worker IN_FD OUT_FD MEMORY_BYTES TIMEOUT_S`` caps its address space, then answers each
``(item, password)`` request read from IN_FD on OUT_FD until IN_FD closes: one ``([result], False)`` message per
result of ``iter_parse`` as it is ready (the parts of a large text file travel one by one), then ``([], True)``; or
``([error], True)`` when the item runs out of time or memory. Errors travel as ``(source, reason)`` tuples. The time
cap counts the CPU time each result takes (a profiling timer), so a busy machine does not fail a file that would
parse in time on an idle one; the parent kills a worker that sends nothing for much longer in wall time (stuck, not
computing), and an alarm later still ends the worker by itself should the parent be gone.
"""

from __future__ import annotations

import math
import resource
import signal
import sys
from multiprocessing.connection import Connection


def _cap_memory(memory_bytes: int) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):  # a platform that refuses the cap: parse without it rather than not at all
        pass


class CpuTimeUp(BaseException):  # not an Exception: parse_item's catch-all must let it through
    """The item used up its CPU time."""


def _time_up(_signum: int, _frame: object) -> None:
    raise CpuTimeUp


def main(argv: list[str]) -> None:
    in_fd, out_fd, memory_bytes = (int(arg) for arg in argv[:3])
    timeout_s = float(argv[3])
    _cap_memory(memory_bytes)  # before the heavy imports, so that they count too
    from ingest.document import IngestError
    from ingest.pipeline import OUT_OF_MEMORY, WALL_FACTOR, cpu_timeout_reason, iter_parse

    alarm_s = math.ceil(WALL_FACTOR * timeout_s) + 60

    signal.signal(signal.SIGPROF, _time_up)
    requests = Connection(in_fd, writable=False)
    results = Connection(out_fd, readable=False)
    while True:
        try:
            item, password = requests.recv()
        except EOFError:
            return
        signal.alarm(alarm_s)
        signal.setitimer(signal.ITIMER_PROF, timeout_s)  # CPU time of this process, user and system
        try:
            for result in iter_parse(item, password):
                signal.setitimer(signal.ITIMER_PROF, 0)
                packed = (result.source, result.reason) if isinstance(result, IngestError) else result
                results.send(([packed], False))
                signal.alarm(alarm_s)
                signal.setitimer(signal.ITIMER_PROF, timeout_s)  # the next part gets the cap anew
            signal.setitimer(signal.ITIMER_PROF, 0)
            results.send(([], True))
        except CpuTimeUp:
            results.send(([(item.source, cpu_timeout_reason(timeout_s))], True))
        except MemoryError:  # a result itself did not fit
            signal.setitimer(signal.ITIMER_PROF, 0)
            results.send(([(item.source, OUT_OF_MEMORY)], True))
        signal.alarm(0)


if __name__ == "__main__":
    main(sys.argv[1:])
