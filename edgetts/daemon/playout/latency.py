"""Where an announcement's time goes between its receipt and its first PCM (issue 14).

Each thread an announcement passes through writes one ``time.monotonic()`` stamp
on its :class:`HopStamps` (a float store: no lock, no allocation on the way), and
the `started` event reports the differences as ``timing_ms``: the hops, in order,
summing to its ``latency_ms``.  ``tools/bench_daemon.py`` adds the one hop the
daemon cannot see, publish -> receipt, from the wall clocks.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The hops of ``timing_ms``, in the order an announcement takes them; each is named after
#: the step that ends it (a cache hit or a clip has no ``handoff`` / ``synth_first``; ``lead`` only
#: when the engine asked to hold playback, so the rest of the text cannot run dry).
HOPS = ("inbox", "parse", "prepare", "queue", "handoff", "synth_first", "lead", "device")


@dataclass
class HopStamps:
    """Monotonic seconds at the end of each hop of one announcement (None: not taken)."""

    received: float
    """paho's callback got the message (Inbound.received_mono)."""
    inbox: float | None = None
    """The loop took it from its inbox."""
    parse: float | None = None
    """The payload is an Announcement (checked, cleaned)."""
    prepare: float | None = None
    """Its text is prepared (SSML, lexicon, normaliser)."""
    queue: float | None = None
    """Admitted and then taken from the queue to play (start_next)."""
    handoff: float | None = None
    """The synthesis thread took its request."""
    synth_first: float | None = None
    """The voice yielded its first chunk (fed to the job)."""
    lead: float | None = None
    """The end of the playback hold that chunk asked for (AudioChunk.lead_s; None: no hold)."""

    def timing_ms(self, first_pcm: float) -> dict[str, float]:
        """The hops up to ``first_pcm`` (the first device write), ms; they sum to ``first_pcm - received``.

        A stamp after ``first_pcm`` (a chime played before the first speech) or before the one
        before it (a resumed announcement's later stamps) ends no hop: its time goes to the next.
        """
        out: dict[str, float] = {}
        last = self.received
        for name in HOPS[:-1]:
            at = getattr(self, name)
            if at is None or at < last or at > first_pcm:
                continue
            out[name] = round((at - last) * 1000.0, 2)
            last = at
        out["device"] = round(max(0.0, first_pcm - last) * 1000.0, 2)
        return out


__all__ = ["HOPS", "HopStamps"]
