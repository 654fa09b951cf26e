"""cpu.numa_node: a no-op with one node or without libnuma, never a crash."""

from __future__ import annotations

import os
import threading

from edgetts.runtime.numa import bind_thread_to_node, load_libnuma


class FakeNuma:
    """libnuma's calls as the binding uses them; records what was asked."""

    def __init__(self, max_node: int = 1, available: int = 0, run_rc: int = 0) -> None:
        self.max_node, self.available, self.run_rc = max_node, available, run_rc
        self.calls: list[tuple[str, int]] = []

    def numa_available(self) -> int:
        return self.available

    def numa_max_node(self) -> int:
        return self.max_node

    def numa_run_on_node(self, node: int) -> int:
        self.calls.append(("run_on_node", node))
        return self.run_rc

    def numa_set_preferred(self, node: int) -> None:
        self.calls.append(("preferred", node))

    def numa_set_strict(self, flag: int) -> None:
        self.calls.append(("strict", flag))


def test_unset_is_a_noop() -> None:
    fake = FakeNuma()
    result = bind_thread_to_node(None, lib=fake)
    assert not result.applied and not result.error and fake.calls == []


def test_two_nodes_binds_cpus_and_memory() -> None:
    fake = FakeNuma(max_node=1)
    result = bind_thread_to_node(1, lib=fake)
    assert result.applied and not result.error
    assert fake.calls == [("run_on_node", 1), ("preferred", 1)]
    strict = FakeNuma(max_node=1)
    assert bind_thread_to_node(0, lib=strict, strict=True).applied
    assert ("strict", 1) in strict.calls


def test_one_node_is_a_noop() -> None:
    fake = FakeNuma(max_node=0)
    result = bind_thread_to_node(0, lib=fake)
    assert not result.applied and not result.error and "one NUMA node" in result.reason
    assert fake.calls == []


def test_bad_node_and_no_numa_are_reported() -> None:
    result = bind_thread_to_node(3, lib=FakeNuma(max_node=1))
    assert not result.applied and result.error and "does not exist (nodes 0-1)" in result.reason
    assert not bind_thread_to_node(0, lib=FakeNuma(available=-1)).error
    failing = bind_thread_to_node(1, lib=FakeNuma(run_rc=-1))
    assert failing.error and "numa_run_on_node(1) failed" in failing.reason


def test_partial_library() -> None:
    class Partial:
        def numa_available(self) -> int:
            return 0

    result = bind_thread_to_node(0, lib=Partial())  # no numa_max_node: reported, no crash
    assert not result.applied and result.error and "libnuma unusable" in result.reason


def test_real_libnuma_here() -> None:
    """This machine: libnuma1 installed, one node -> a no-op; affinity untouched."""
    before = os.sched_getaffinity(0)
    out = []
    t = threading.Thread(target=lambda: out.append(bind_thread_to_node(0)))
    t.start()
    t.join()
    (result,) = out
    if load_libnuma() is None:
        assert result.error and "not installed" in result.reason
    else:
        assert not result.applied and not result.error
    assert os.sched_getaffinity(0) == before
