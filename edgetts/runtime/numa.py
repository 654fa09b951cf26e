"""Binding inference threads and their memory to one NUMA node (``cpu.numa_node``).

libnuma through ctypes (the runtime ``libnuma.so.1`` is enough, no -dev
package).  ``numa_run_on_node`` and ``numa_set_preferred`` act on the
*calling thread* (and threads it creates later inherit both), so call
:func:`bind_thread_to_node` on the thread that creates the onnxruntime session
and runs it, before the session is built.  Preferred, not strict membind, by
default: a full node then spills to another instead of the OOM killer.

A no-op (``applied=False``, no error) when ``numa_node`` is None, when the
machine has one node, or when libnuma is missing; a node that does not exist
is reported, never raised.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
from dataclasses import dataclass
from typing import Any

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class NumaResult:
    applied: bool
    """True when the calling thread was bound to the node."""
    reason: str
    """What was done, or why nothing was (one line, for logs and the status)."""
    error: bool = False
    """True when something was asked for and could not be done (show as degraded)."""


@functools.cache
def load_libnuma() -> Any | None:
    """libnuma, or None when it is not installed."""
    for name in (ctypes.util.find_library("numa"), "libnuma.so.1"):
        if not name:
            continue
        try:
            return ctypes.CDLL(name, use_errno=True)
        except OSError:
            continue
    return None


def bind_thread_to_node(node: int | None, *, lib: Any | None = None, strict: bool = False) -> NumaResult:
    """Run the calling thread on ``node``'s CPUs and allocate from its memory.

    ``lib``: a libnuma-like object (tests pass a fake); default the real one.
    ``strict``: ``numa_set_membind`` semantics via ``numa_set_strict`` + preferred.
    """
    if node is None:
        return NumaResult(False, "cpu.numa_node not set")
    lib = lib if lib is not None else load_libnuma()
    if lib is None:
        return NumaResult(False, "libnuma not installed: cpu.numa_node ignored (apt install libnuma1)", error=True)
    try:
        if lib.numa_available() < 0:
            return NumaResult(False, "the kernel has no NUMA support: cpu.numa_node ignored")
        max_node = int(lib.numa_max_node())
        if node < 0 or node > max_node:
            return NumaResult(False, f"cpu.numa_node {node} does not exist (nodes 0-{max_node})", error=True)
        if max_node == 0:
            return NumaResult(False, "one NUMA node: nothing to bind")
        if lib.numa_run_on_node(int(node)) != 0:
            err = ctypes.get_errno()
            return NumaResult(False, f"numa_run_on_node({node}) failed (errno {err})", error=True)
        if strict:
            lib.numa_set_strict(1)
        lib.numa_set_preferred(int(node))
    except (AttributeError, OSError) as err:  # a libnuma without the symbols
        return NumaResult(False, f"libnuma unusable: {err}", error=True)
    policy = "strict" if strict else "preferred"
    return NumaResult(True, f"inference bound to NUMA node {node} (CPUs and {policy} memory)")
