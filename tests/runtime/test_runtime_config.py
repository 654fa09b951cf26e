"""The cpu / keepalive / memory config sections: defaults and validation messages."""

from __future__ import annotations

import dataclasses

import pytest

from edgetts.runtime.settings import CpuSettings, KeepaliveSettings, MemorySettings, RuntimeConfigError


def test_defaults() -> None:
    assert CpuSettings() == CpuSettings(inference_cores="auto", audio_core=None, numa_node=None, realtime_audio=False)
    assert KeepaliveSettings().interval_s == 30.0
    assert MemorySettings().lock is True
    for section in (CpuSettings(), KeepaliveSettings(), MemorySettings()):
        section.validate()
        with pytest.raises(dataclasses.FrozenInstanceError):
            section.__setattr__("x", 1)


@pytest.mark.parametrize(
    ("section", "path", "text"),
    [
        (CpuSettings(inference_cores="fast"), ("inference_cores",), "'big' or 'auto'"),  # type: ignore[arg-type]
        (CpuSettings(inference_cores=()), ("inference_cores",), "empty"),
        (CpuSettings(inference_cores=(4, -1)), ("inference_cores", "1"), "not a CPU id"),
        (CpuSettings(inference_cores=(4, 4)), ("inference_cores",), "twice"),
        (CpuSettings(audio_core=-2), ("audio_core",), "not a CPU id"),
        (CpuSettings(numa_node=-1), ("numa_node",), "NUMA"),
        (KeepaliveSettings(interval_s=0.5), ("interval_s",), "0 (off) or 1-86400"),
        (KeepaliveSettings(interval_s=-1), ("interval_s",), "0 (off)"),
        (MemorySettings(lock="yes"), ("lock",), "true or false"),  # type: ignore[arg-type]
    ],
)
def test_errors_name_the_key(section, path, text) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RuntimeConfigError) as info:
        section.validate()
    assert info.value.path == path and text in info.value.problem
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith("/".join(path) + ": ")


def test_valid_values() -> None:
    CpuSettings(inference_cores=(4, 5, 6, 7), audio_core=0, numa_node=1, realtime_audio=True).validate()
    CpuSettings(inference_cores="big").validate()
    KeepaliveSettings(interval_s=0).validate()
    KeepaliveSettings(interval_s=300).validate()
