"""The clock's health from adjtimex (edgetts.runtime.clock, issue 19): the struct as the C library
lays it out (checked against a C program built here), the kernel's answer read the same way C
reads it, and what each state means."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

from edgetts.runtime.clock import STA_UNSYNC, TIME_ERROR, Timex, clock_health, health_of, read_timex

C_PROGRAM = r"""
#include <stddef.h>
#include <stdio.h>
#include <sys/timex.h>
#define F(name) printf(#name " %zu\n", offsetof(struct timex, name));
int main(void) {
    struct timex tx = {0};
    int state = adjtimex(&tx);
    printf("size %zu\n", sizeof(struct timex));
    F(modes) F(offset) F(freq) F(maxerror) F(esterror) F(status) F(constant) F(precision) F(tolerance)
    F(time) F(tick) F(ppsfreq) F(jitter) F(shift) F(stabil) F(jitcnt) F(calcnt) F(errcnt) F(stbcnt) F(tai)
    printf("state %d\nstatus_value %d\nesterror_value %ld\ntolerance_value %ld\ntick_value %ld\n",
           state, tx.status, tx.esterror, tx.tolerance, tx.tick);
    return 0;
}
"""


@pytest.fixture(scope="module")
def from_c(tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    if shutil.which("gcc") is None:
        pytest.skip("no gcc (scripts/system-deps.sh installs it)")
    d: Path = tmp_path_factory.mktemp("timex")
    (d / "timex.c").write_text(C_PROGRAM)
    subprocess.run(["gcc", "-O0", "-o", str(d / "timex"), str(d / "timex.c")], check=True, timeout=60)
    out = subprocess.run([str(d / "timex")], check=True, capture_output=True, text=True, timeout=10).stdout
    return {name: int(value) for name, value in (line.split() for line in out.splitlines())}


def test_the_struct_is_laid_out_as_the_c_library_has_it(from_c: dict[str, int]) -> None:
    assert ctypes.sizeof(Timex) == from_c["size"]
    for name, _ in Timex._fields_:
        if not name.startswith("_"):
            assert getattr(Timex, name).offset == from_c[name], name


def test_the_kernel_s_answer_reads_as_c_reads_it(from_c: dict[str, int]) -> None:
    read = read_timex()
    assert read is not None
    state, tx = read
    assert (state, tx.status, tx.tolerance, tx.tick) == (
        from_c["state"],
        from_c["status_value"],
        from_c["tolerance_value"],
        from_c["tick_value"],
    )
    health = clock_health()
    synced = from_c["state"] != TIME_ERROR and not from_c["status_value"] & STA_UNSYNC
    assert health.synchronized is synced
    assert health.error_ms == pytest.approx(from_c["esterror_value"] / 1000.0, abs=1.0)


def test_what_each_state_means() -> None:
    good = Timex(status=0x2001, esterror=250, maxerror=3500)  # STA_PLL | STA_NANO-like bits, in sync
    assert health_of(0, good).to_dict() == {"synchronized": True, "error_ms": 0.25, "max_error_ms": 3.5, "reason": None}
    unsync = health_of(0, Timex(status=STA_UNSYNC, esterror=16_000_000, maxerror=16_000_000))
    assert unsync.synchronized is False and unsync.error_ms == 16000.0 and "not synchronized" in (unsync.reason or "")
    assert health_of(TIME_ERROR, Timex(status=0)).synchronized is False
