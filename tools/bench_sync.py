#!/usr/bin/env python3
"""How closely N speakers play one synchronized announcement (issue 19).

N real daemons (the real default voice, subprocesses) in one group on a private
mosquitto, each playing into its own zone of one paced sink (tools/sync_rig.py);
announcements sent with `edgetts announce --sync` (the library function, lead from
the members' published speed).  For each announcement the first sample is found on
every speaker by cross-correlation with the announcement's own samples; reported:
the spread between speakers and the error against `play_at` (median, max over
every announcement), and how many starts joined late.

    python -m tools.bench_sync --daemons 3 --json sync-3.json
    python -m tools.bench_sync --daemons 8 --announcements 20 --json sync-8.json

JSON: {"daemons", "announcements", "spread_ms_median", "spread_ms_max",
"play_at_error_ms_median", "play_at_error_ms_max", "late_joins", ...} (the first
seven are the names the issue fixes; the rest say how it was run).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tools.daemon_rig import start_broker
from tools.results import default_path, write_result
from tools.sync_rig import SyncRig, heard, reference_audio

LINES = (
    "The train to the airport is arriving at platform two.",
    "Please keep your luggage with you at all times.",
    "The shop closes in ten minutes; please make your way to the tills.",
    "Boarding is now complete at gate four.",
    "The lift on the east side is out of service.",
)


def run(daemons: int, announcements: int, lead: float | None, workdir: Path) -> dict[str, object]:
    broker, port = start_broker(workdir)
    try:
        with SyncRig(workdir, port, daemons) as rig:
            rig.wait_online(60 + 20 * daemons)
            with rig.sink.record() as rec:
                items = [
                    rig.announce(f"bench-{k}", LINES[k % len(LINES)], lead=lead, timeout=120)
                    for k in range(announcements)
                ]
                time.sleep(0.3)
                pcm = rec.stop()
        refs = reference_audio(items)
    finally:
        broker.terminate()
        broker.wait(10)
    spreads, errors, late, weak, late_each, underruns, weak_items = [], [], 0, 0, [], 0, []
    for item in items:
        found = heard(rec, pcm, rig.devices, item, refs[item.id])
        weak += sum(h.score < 0.9 for h in found)
        onsets = [h.onset_unix for h in found]
        spreads.append(1000.0 * (max(onsets) - min(onsets)))
        errors += [1000.0 * abs(o - item.play_at) for o in onsets]
        late_each.append(sum("late_ms" in evs.get("started", {}) for evs in item.events.values()))
        underruns += sum(int(evs.get("finished", {}).get("underruns") or 0) for evs in item.events.values())
        if any(h.score < 0.9 for h in found):
            weak_items.append(
                {
                    "id": item.id,
                    "scores": [round(h.score, 3) for h in found],
                    "onsets_ms": [round(1000 * (h.onset_unix - item.play_at), 2) for h in found],
                }
            )
        late += late_each[-1]
    leads = [round(item.play_at - item.sent_at, 3) for item in items]
    return {
        "daemons": daemons,
        "announcements": announcements,
        "spread_ms_median": round(statistics.median(spreads), 3),
        "spread_ms_max": round(max(spreads), 3),
        "play_at_error_ms_median": round(statistics.median(errors), 3),
        "play_at_error_ms_max": round(max(errors), 3),
        "late_joins": late,
        "late_joins_by_announcement": late_each,
        "weak_matches": weak,
        "weak": weak_items,
        "underruns": underruns,
        "lead_s_median": statistics.median(leads) if leads else None,
        "lead": "from the members' speed" if lead is None else lead,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--daemons", type=int, default=3)
    parser.add_argument("--announcements", type=int, default=20)
    parser.add_argument("--lead", type=float, help="seconds to play_at (default: from the members' speed)")
    parser.add_argument(
        "--json", type=Path, default=default_path("bench_sync"), help="write the result here (default: %(default)s)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        result = run(args.daemons, args.announcements, args.lead, Path(tmp))
    text = json.dumps(result, indent=2)
    print(text)
    write_result("bench_sync", result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
