"""Worker process of :func:`ingest.pipeline.parse_items_isolated`.

``python -m ingest.worker IN_FD OUT_FD MEMORY_BYTES TIMEOUT_S`` caps its address space, then answers each
``(item, password)`` request read from IN_FD with the pickled results of ``parse_item`` on OUT_FD until IN_FD
closes. Errors travel as ``(source, reason)`` tuples. The parent kills a worker that runs past the time cap; an
alarm a little later ends the worker by itself should the parent be gone.
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


def main(argv: list[str]) -> None:
    in_fd, out_fd, memory_bytes = (int(arg) for arg in argv[:3])
    alarm_s = math.ceil(float(argv[3])) + 30
    _cap_memory(memory_bytes)  # before the heavy imports, so that they count too
    from ingest.document import IngestError
    from ingest.pipeline import OUT_OF_MEMORY, parse_item

    requests = Connection(in_fd, writable=False)
    results = Connection(out_fd, readable=False)
    while True:
        try:
            item, password = requests.recv()
        except EOFError:
            return
        signal.alarm(alarm_s)
        try:
            parsed = parse_item(item, password)
            results.send([(r.source, r.reason) if isinstance(r, IngestError) else r for r in parsed])
        except MemoryError:  # the results themselves did not fit
            results.send([(item.source, OUT_OF_MEMORY)])
        signal.alarm(0)


if __name__ == "__main__":
    main(sys.argv[1:])
