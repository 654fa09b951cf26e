"""The shipped espeak-ng data loads, and reads like piper-tts, in a process where piper cannot be imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from support.paths import ROOT

LINE = "The 18:15 service has been cancelled. The alarm has been tested."
# A fresh interpreter whose imports of piper fail, as on a machine without piper-tts.
NO_PIPER = """
import importlib.abc, json, sys

class NoPiper(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "piper" or name.startswith("piper."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)")
        return None

sys.meta_path.insert(0, NoPiper())
try:
    import piper  # noqa: F401
    blocked = False
except ModuleNotFoundError:
    blocked = True

import espeakng_loader
from edgetts.voice.piper.phonemize import espeak_data_path, phonemize

sentences = ["".join(s) for s in phonemize(sys.argv[1], "en-us")]
print(json.dumps({
    "blocked": blocked,
    "data": str(espeak_data_path()),
    "library": espeakng_loader.get_library_path(),
    "maps": open("/proc/self/maps").read(),
    "sentences": sentences,
    "piper_modules": sorted(m for m in sys.modules if m == "piper" or m.startswith("piper.")),
}))
"""


def test_data_loads_and_reads_has_been_without_piper(piper_voice) -> None:  # type: ignore[no-untyped-def]
    """piper-tts runs here, in the parent, only as the oracle."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", NO_PIPER, LINE], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["blocked"] and out["piper_modules"] == []
    assert out["data"] == str(ROOT / "edgetts" / "data" / "espeak")
    # espeakng-loader's library is the one mapped, and nothing of piper's package.
    assert os.path.realpath(out["library"]) in out["maps"]
    assert "/piper/" not in out["maps"]
    assert out["sentences"] == ["".join(p) for p in piper_voice.phonemize(LINE)]
    assert [s.count("hɐzbɪn") for s in out["sentences"]] == [1, 1]


def test_data_headers_are_what_the_1_52_library_reads() -> None:
    """What libespeak-ng 1.52's LoadPhData checks or sizes by (synthdata.c, phoneme.h, synthesize.h)."""
    data = ROOT / "edgetts" / "data" / "espeak" / "espeak-ng-data"
    version_phdata = 0x014801  # 1.52's and 724808c's synthdata.c: a mismatch refuses the data
    assert int.from_bytes((data / "phondata").read_bytes()[:4], "little") == version_phdata
    assert int.from_bytes((data / "phonindex").read_bytes()[:4], "little") == version_phdata
    tables = (data / "phontab").read_bytes()[0]
    assert tables == 140 and tables < 150  # N_PHONEME_TABS of both; 1.52.0's own data has 134
    assert (data / "intonations").stat().st_size == 38 * 68  # 38 tunes of sizeof(TUNE), unchanged since 1.52
