"""The whole config file: one field per section, and the values derived from them.

Derived values (topics, client id, text options) live here so no caller
recomputes them differently.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgetts.config.auto_voice import auto_voices, check_languages, is_auto
from edgetts.config.bus import DeviceSettings, MqttSettings
from edgetts.config.duck import DuckSettings
from edgetts.config.errors import FieldError
from edgetts.config.http import HttpSettings
from edgetts.config.integrations import HomeAssistantSettings, WyomingSettings
from edgetts.config.schedule import ScheduleSettings
from edgetts.config.sections import (
    AudioSettings,
    CacheSettings,
    ClipSettings,
    FallbackSettings,
    LoggingSettings,
    LoudnessSettings,
    QueueSettings,
    VoiceModelSettings,
    VoiceSettings,
)
from edgetts.config.sync import SyncSettings
from edgetts.config.voices import LIBRARY_KEYS, VoiceLibrarySettings, VoiceTable, check_voices
from edgetts.runtime.settings import CpuSettings, KeepaliveSettings, MemorySettings
from edgetts.text.lexicon import Lexicon
from edgetts.text.normalize import NormalizeOptions
from edgetts.text.prepare import TextOptions
from edgetts.vocabulary import DEGRADE_INT8 as INT8
from edgetts.vocabulary import NAME_RE

if TYPE_CHECKING:
    VoiceEntries = dict[str, VoiceModelSettings]
else:
    # What the loader converts `voices:` into (it reads this annotation): voice settings by name and the
    # plain values of the reserved keys base_url and dir, which __post_init__ moves beside them
    # (VoiceTable.library).  Once built, `voices` holds voice settings only: the type above, which callers see.
    VoiceEntries = dict[str, VoiceModelSettings | str | None]


@dataclass(frozen=True)
class Config:
    """The whole daemon configuration."""

    device: DeviceSettings = field(default_factory=DeviceSettings)
    mqtt: MqttSettings = field(default_factory=MqttSettings)
    audio: AudioSettings = field(default_factory=AudioSettings)
    voice: VoiceSettings = field(default_factory=VoiceSettings)
    voices: VoiceEntries = field(default_factory=dict)
    """More voices by name, chosen per announcement with `"voice": "<name>"`."""
    queue: QueueSettings = field(default_factory=QueueSettings)
    clips: ClipSettings = field(default_factory=ClipSettings)
    fallback: FallbackSettings = field(default_factory=FallbackSettings)
    cache: CacheSettings = field(default_factory=CacheSettings)
    loudness: LoudnessSettings = field(default_factory=LoudnessSettings)
    normalize: NormalizeOptions = field(default_factory=NormalizeOptions)
    """How numbers, times, money and codes are read (docs/normalization.md)."""
    lexicon: dict[str, str] = field(default_factory=dict)
    """Site lexicon: word or phrase -> respelling, or /IPA/ phonemes."""
    cpu: CpuSettings = field(default_factory=CpuSettings)
    """Where inference and audio run (docs/edge-runtime.md)."""
    keepalive: KeepaliveSettings = field(default_factory=KeepaliveSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    logging: LoggingSettings = field(default_factory=LoggingSettings)
    wyoming: WyomingSettings = field(default_factory=WyomingSettings)
    """The Wyoming TTS server (Home Assistant; read at start-up only)."""
    homeassistant: HomeAssistantSettings = field(default_factory=HomeAssistantSettings)
    """MQTT discovery for Home Assistant (read at start-up only)."""
    http: HttpSettings = field(default_factory=HttpSettings)
    """The operator's console and JSON API (issue 18; off by default; a change needs a restart)."""
    sync: SyncSettings = field(default_factory=SyncSettings)
    """Synchronized zone announcements (issue 19)."""
    schedule: ScheduleSettings = field(default_factory=ScheduleSettings)
    """Announcements on a timetable (docs/schedule.md)."""
    duck: DuckSettings = field(default_factory=DuckSettings)
    """Other audio lowered while edgetts plays (docs/ducking.md)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "voices", VoiceTable.of(self.voices))

    @property
    def voice_library(self) -> VoiceLibrarySettings:
        """`voices/base_url` and `voices/dir` (edgetts/config/voices.py): kept beside the voices, not a section."""
        return self.voices.library if isinstance(self.voices, VoiceTable) else VoiceLibrarySettings()

    def validate(self) -> None:
        try:
            Lexicon.from_mapping(self.lexicon)
        except ValueError as exc:
            raise FieldError(("lexicon",), str(exc)) from None
        check_voices(self.voices)
        try:
            self.voice_library.validate()
        except FieldError as exc:
            raise FieldError(("voices", *exc.path), exc.problem) from None
        for name in self.voices:
            if not NAME_RE.match(name):
                raise FieldError(("voices", name), f"{name!r} is not a valid voice name")
            if name == self.voice.name:
                raise FieldError(("voices", name), "same name as voice/name")
        check_languages(self)
        self._check_degrade_to()
        for i, group in enumerate(self.sync.groups):
            if group not in self.device.groups:
                raise FieldError(("sync", "groups", str(i)), f"{group!r} is not one of device.groups")
        for i, entry in enumerate(self.schedule.entries):  # (what admission would refuse at its time)
            where = ("schedule", "entries", str(i))
            if entry.voice is not None and entry.voice not in self.all_voices():
                raise FieldError((*where, "voice"), f"{entry.voice!r} is not a configured voice")
            if entry.repeat > self.queue.max_repeat:
                raise FieldError((*where, "repeat"), f"more than queue/max_repeat ({self.queue.max_repeat})")
            if entry.text is not None and len(entry.text) > self.queue.max_text_chars:
                raise FieldError((*where, "text"), f"longer than queue/max_text_chars ({self.queue.max_text_chars})")

    def _check_degrade_to(self) -> None:
        """Each voice's degrade_to is int8, another configured voice or a path to an .onnx file."""
        names = self.all_voices()
        if INT8 in names:
            where = ("voice", "name") if self.voice.name == INT8 else ("voices", INT8)
            raise FieldError(where, f"{INT8!r} is reserved: `degrade_to: {INT8}` names each voice's own int8 variant")
        for name, settings in names.items():
            target = settings.degrade_to
            path = ("voice",) if name == self.voice.name else ("voices", name)
            if target is None or target == INT8 or (target in names and target != name):
                continue
            if target == name:
                raise FieldError(path + ("degrade_to",), "names this voice itself")
            if not target.endswith(".onnx"):
                raise FieldError(
                    path + ("degrade_to",),
                    f"{target[:80]!r} is not {INT8}, a configured voice ({', '.join(names)}) "
                    "or a path to an .onnx file",
                )

    # -- derived values, so no caller recomputes them differently
    def text_options(self) -> TextOptions:
        """How every voice prepares text: the normaliser's options and the site lexicon."""
        lexicon = Lexicon.from_mapping(self.lexicon) if self.lexicon else None
        return TextOptions(normalize_options=self.normalize, lexicon=lexicon)

    def all_voices(self) -> dict[str, VoiceModelSettings]:
        """Every configured voice by name, the default one first (under `voice.model: auto`, the
        voices its languages name too: edgetts/config/auto_voice.py)."""
        if is_auto(self):
            return auto_voices(self)
        return {self.voice.name: self.voice, **self.voices}

    def voices_dir(self) -> Path:
        """Where `edgetts voices install` puts voices and where a voice name is looked up first."""
        return self.voice_library.resolved_dir(self.queue.resolved_state_dir())

    @property
    def client_id(self) -> str:
        return self.mqtt.client_id or f"edgetts-{self.device.id}"

    @property
    def base_topic(self) -> str:
        return f"{self.mqtt.topic_prefix}/{self.device.id}"

    @property
    def status_topic(self) -> str:
        return f"{self.base_topic}/status"

    @property
    def events_topic(self) -> str:
        return f"{self.base_topic}/events"

    @property
    def control_topic(self) -> str:
        """Stop and cancel (edgetts.daemon.inbound.control)."""
        return f"{self.base_topic}/control"

    @property
    def announce_topics(self) -> tuple[str, ...]:
        prefix = self.mqtt.topic_prefix
        topics = [f"{self.base_topic}/announce", f"{prefix}/all/announce"]
        topics += [f"{prefix}/group/{g}/announce" for g in self.device.groups]
        return tuple(topics)

    def to_dict(self) -> dict[str, Any]:
        """The effective config as plain data (what print-config shows): `voices/base_url` and `voices/dir` first."""
        plain: dict[str, Any] = _to_plain(self)
        library = _to_plain(self.voice_library)
        plain["voices"] = {k: library[k] for k in LIBRARY_KEYS} | plain["voices"]
        return plain


def _to_plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # A field's YAML key (`from`: metadata["key"]), so print-config reads back as it loaded.
        return {f.metadata.get("key", f.name): _to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime.date):
        return value.isoformat()  # (plain JSON for /api/config too)
    if isinstance(value, dict):
        return {k: _to_plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_to_plain(v) for v in value]
    return value
