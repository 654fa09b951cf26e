"""Issue 15: what the model cache and the split cache are keyed by, so an entry made on an x86
build host (a prebuilt image, a copied cache directory) is never used unchecked on an aarch64 board."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgetts.voice import model_cache
from edgetts.voice.piper import split_cache

RK3588_CPUINFO = "".join(
    f"processor\t: {cpu}\nBogoMIPS\t: 48.00\n"
    "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\n"
    f"CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: {variant}\nCPU part\t: {part}\nCPU revision\t: 0\n\n"
    for cpu, (variant, part) in enumerate([("0x2", "0xd05")] * 4 + [("0x4", "0xd0b")] * 4)
)
"""An RK3588's /proc/cpuinfo: four Cortex-A55 (0xd05), then four Cortex-A76 (0xd0b)."""

PI4_CPUINFO = "".join(
    f"processor\t: {cpu}\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\nCPU implementer\t: 0x41\n"
    "CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\nCPU revision\t: 3\n\n"
    for cpu in range(4)
)
"""A Raspberry Pi 4's: four Cortex-A72 (0xd08)."""

X86_CPUINFO = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\nflags\t\t: fpu sse sse2 avx2 avx512f\n\n"


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    path = tmp_path / "voice.onnx"
    path.write_bytes(b"model")
    return path


def _cpuinfo(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    return path


def test_arm_cpu_identity_names_each_core_type_once(tmp_path: Path) -> None:
    identity = model_cache.cpu_identity(_cpuinfo(tmp_path, RK3588_CPUINFO)).splitlines()
    assert sum(line.startswith("Features") for line in identity) == 1
    assert [line for line in identity if line.startswith("CPU part")] == ["CPU part\t: 0xd05", "CPU part\t: 0xd0b"]
    assert "CPU implementer\t: 0x41" in identity and "CPU architecture: 8" in identity
    x86 = model_cache.cpu_identity(_cpuinfo(tmp_path, X86_CPUINFO)).splitlines()
    assert x86 == ["model name\t: Intel(R) Xeon(R)", "flags\t\t: fpu sse sse2 avx2 avx512f"]


def test_model_cache_key_differs_by_board(monkeypatch: pytest.MonkeyPatch, model: Path, tmp_path: Path) -> None:
    keys, read_identity = {}, model_cache.cpu_identity
    for machine, text in (("x86_64", X86_CPUINFO), ("aarch64", RK3588_CPUINFO), ("aarch64", PI4_CPUINFO)):
        identity = read_identity(_cpuinfo(tmp_path, text))
        monkeypatch.setattr(model_cache.platform, "machine", lambda m=machine: m)
        monkeypatch.setattr(model_cache, "cpu_identity", lambda i=identity: i)
        keys[(machine, text)] = model_cache.cache_key(model, "1.20.0", "all")
    assert len(set(keys.values())) == 3  # x86, an RK3588 and a Pi 4 never share an optimised graph
    # the same model on any machine is one family: an entry of another CPU is replaced, not kept
    assert len({k.rsplit("-", 1)[0] for k in keys.values()}) == 1


def test_split_key_differs_by_architecture(monkeypatch: pytest.MonkeyPatch, model: Path) -> None:
    monkeypatch.setattr(split_cache.platform, "machine", lambda: "x86_64")
    x86 = split_cache._split_key(model, 2, 1)
    assert split_cache._split_key(model, 2, 1) == x86  # stable on one machine
    monkeypatch.setattr(split_cache.platform, "machine", lambda: "aarch64")
    arm = split_cache._split_key(model, 2, 1)
    assert arm != x86
    assert arm.startswith(split_cache._split_family(model)) and x86.startswith(split_cache._split_family(model))


def test_split_key_differs_by_onnxruntime(monkeypatch: pytest.MonkeyPatch, model: Path) -> None:
    """The split is checked with this onnxruntime's kernels: another version checks it again."""
    before = split_cache._split_key(model, 2, 1)
    monkeypatch.setattr(split_cache.ort, "__version__", "0.0.1-other")
    assert split_cache._split_key(model, 2, 1) != before


def test_a_split_of_another_architecture_is_not_read(
    monkeypatch: pytest.MonkeyPatch, model: Path, tmp_path: Path
) -> None:
    """A cache directory carried from an x86 host: the aarch64 board looks under another name."""
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setattr(split_cache.platform, "machine", lambda: "x86_64")
    x86 = split_cache._CacheEntry.of(model, cache, 2, 1)
    x86.meta.write_text(
        '{"frame_inputs": [], "hop": 256, "margin": 2, "gain": 1.0, "flow_inputs": [],'
        ' "flow_margin": 1, "durations": ""}'
    )
    for part in x86.parts.values():
        part.write_bytes(b"x")
    assert x86.read(model) is not None
    monkeypatch.setattr(split_cache.platform, "machine", lambda: "aarch64")
    arm = split_cache._CacheEntry.of(model, cache, 2, 1)
    assert arm.meta != x86.meta and arm.read(model) is None
