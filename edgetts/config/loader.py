"""The daemon's configuration: one YAML file, typed, validated as a whole.

Every section is a frozen dataclass; a field's docstring carries its unit.
:func:`load_config` rejects unknown keys and reports every problem as
``FILE:LINE key/path: problem`` so an operator can fix an edit before
``systemctl reload``.  Adding a section is one dataclass plus one field on
:class:`Config`: the loader is generic over the dataclasses below.
"""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from edgetts.runtime.settings import CpuSettings, KeepaliveSettings, MemorySettings, RuntimeConfigError
from edgetts.text.lexicon import Lexicon
from edgetts.text.normalize import NormalizeOptions
from edgetts.text.prepare import TextOptions

DEFAULT_CONFIG_PATH = Path("/etc/edgetts/edgetts.yaml")

Priority = Literal["emergency", "high", "normal", "low"]

#: A topic level / id an operator may choose: no MQTT wildcards, no separators.
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: A clip name (the same rule as edgetts.daemon.messages.CLIP_NAME_RE): never a path.
_CLIP_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")


class ConfigError(Exception):
    """One or more problems in a config file; ``str()`` is one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class _FieldError(Exception):
    """A problem at a key path, before the file and line are known."""

    def __init__(self, path: tuple[str, ...], problem: str) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem


def _default_device_id() -> str:
    host = socket.gethostname().split(".")[0]
    host = re.sub(r"[^A-Za-z0-9_-]", "-", host).strip("-")
    return host or "edgetts"


# --------------------------------------------------------------------- sections


@dataclass(frozen=True)
class DeviceSettings:
    """This announcer's identity on the bus."""

    id: str = field(default_factory=_default_device_id)
    """Topic level naming this device (`<prefix>/<id>/announce`); default: the host name."""

    groups: tuple[str, ...] = ()
    """Zones/groups this device also listens to: `<prefix>/group/<name>/announce`."""

    def validate(self) -> None:
        if not _NAME_RE.match(self.id):
            raise _FieldError(("id",), f"{self.id!r} is not a valid id (letters, digits, - _ .)")
        for i, group in enumerate(self.groups):
            if not _NAME_RE.match(group):
                raise _FieldError(("groups", str(i)), f"{group!r} is not a valid group name")


@dataclass(frozen=True)
class TlsSettings:
    """TLS to the broker; mutual TLS when cert_file and key_file are set."""

    enabled: bool = False
    """Use TLS (the broker's port is then usually 8883)."""

    ca_file: str | None = None
    """PEM CA bundle that signed the broker's certificate; None = the system CAs."""

    cert_file: str | None = None
    """PEM client certificate for mutual TLS."""

    key_file: str | None = None
    """PEM private key of cert_file."""

    insecure: bool = False
    """Skip the host name check of the broker certificate (never in production)."""

    def validate(self) -> None:
        if (self.cert_file is None) != (self.key_file is None):
            raise _FieldError(("cert_file",), "cert_file and key_file must be set together")
        for name in ("ca_file", "cert_file", "key_file"):
            value = getattr(self, name)
            if value is not None and self.enabled and not os.path.isfile(value):
                raise _FieldError((name,), f"no such file: {value}")


@dataclass(frozen=True)
class MqttSettings:
    """The broker connection."""

    host: str = "127.0.0.1"
    """Broker host name or address."""

    port: int = 1883
    """Broker TCP port."""

    topic_prefix: str = "edgetts"
    """First topic level(s) of every topic this device uses."""

    client_id: str | None = None
    """MQTT client id, fixed so the session persists; None = `edgetts-<device.id>`."""

    protocol: Literal["auto", "5", "3.1.1"] = "auto"
    """`auto` = MQTT 5, falling back to 3.1.1 when the broker refuses 5."""

    keepalive_s: int = 30
    """Seconds between keep-alive pings."""

    session_expiry_s: int = 604800
    """Seconds the broker keeps this device's session (and its queued messages) while it is away (MQTT 5)."""

    username: str | None = None
    """User name; None = anonymous."""

    password: str | None = None
    """Password in the clear; prefer password_file or password_credential."""

    password_file: str | None = None
    """File whose first line is the password."""

    password_credential: str | None = None
    """Name of a systemd credential (LoadCredential=) holding the password."""

    reconnect_min_s: float = 1.0
    """First reconnect delay, seconds; doubled on every failure."""

    reconnect_max_s: float = 60.0
    """Cap of the reconnect delay, seconds."""

    tls: TlsSettings = field(default_factory=TlsSettings)

    def validate(self) -> None:
        if not 1 <= self.port <= 65535:
            raise _FieldError(("port",), f"{self.port} is not a TCP port (1-65535)")
        levels = self.topic_prefix.split("/")
        if not self.topic_prefix or any(not lv or "+" in lv or "#" in lv for lv in levels):
            raise _FieldError(("topic_prefix",), f"{self.topic_prefix!r} is not a topic prefix")
        if self.keepalive_s < 5:
            raise _FieldError(("keepalive_s",), "must be at least 5")
        if self.session_expiry_s < 0:
            raise _FieldError(("session_expiry_s",), "must be >= 0")
        given = [n for n in ("password", "password_file", "password_credential") if getattr(self, n)]
        if len(given) > 1:
            raise _FieldError((given[1],), f"set only one of {', '.join(given)}")
        if given and self.username is None:
            raise _FieldError((given[0],), "a password needs mqtt/username")
        if self.password_file is not None and not os.path.isfile(self.password_file):
            raise _FieldError(("password_file",), f"no such file: {self.password_file}")
        if self.password_credential is not None and "/" in self.password_credential:
            raise _FieldError(("password_credential",), "a credential name has no '/'")
        if not 0 < self.reconnect_min_s <= self.reconnect_max_s:
            raise _FieldError(("reconnect_min_s",), "need 0 < reconnect_min_s <= reconnect_max_s")


@dataclass(frozen=True)
class AudioSettings:
    """The sound output."""

    device: str | int = "default"
    """PortAudio/ALSA output device: `default`, a device index, or (part of) its name."""

    sample_rate: int | None = None
    """Hertz the device is opened at; None = the default voice's rate."""

    channels: int = 1
    """Channels the device is opened with (mono audio is copied to each)."""

    sample_format: Literal["int16", "int32", "float32"] = "int16"
    """Sample format the device is opened with."""

    block_frames: int = 256
    """Frames per write to the device; smaller = quicker preemption."""

    lead_in_ms: int = 0
    """Silence before each announcement, milliseconds, for amplifiers that wake on signal."""

    fade_ms: int = 5
    """Fade-in at the start and fade-out at the end of each announcement, milliseconds."""

    preempt_fade_ms: int = 20
    """Fade-out when an announcement is interrupted, milliseconds (at most 30)."""

    volume: float = 1.0
    """Linear gain for everything played (0-1); an announcement's volume multiplies it."""

    close_idle_s: float = 5.0
    """Close the device after this many idle seconds so other players may use it."""

    reopen_min_s: float = 0.5
    """First delay before reopening a failed device, seconds; doubled per failure."""

    reopen_max_s: float = 30.0
    """Cap of the reopen delay, seconds."""

    realtime_pacing: bool = False
    """Pace writes to real time; only for sinks that do not block (ALSA null/file plugin)."""

    def validate(self) -> None:
        if isinstance(self.device, int) and self.device < 0:
            raise _FieldError(("device",), "a device index is >= 0")
        if self.sample_rate is not None and not 8000 <= self.sample_rate <= 192000:
            raise _FieldError(("sample_rate",), "must be 8000-192000 Hz")
        if not 1 <= self.channels <= 8:
            raise _FieldError(("channels",), "must be 1-8")
        if not 16 <= self.block_frames <= 8192:
            raise _FieldError(("block_frames",), "must be 16-8192")
        for name, top in (("lead_in_ms", 5000), ("fade_ms", 100), ("preempt_fade_ms", 30)):
            value = getattr(self, name)
            if not 0 <= value <= top:
                raise _FieldError((name,), f"must be 0-{top}")
        if not 0.0 <= self.volume <= 1.0:
            raise _FieldError(("volume",), "must be 0-1")
        if self.close_idle_s < 0:
            raise _FieldError(("close_idle_s",), "must be >= 0")
        if not 0 < self.reopen_min_s <= self.reopen_max_s:
            raise _FieldError(("reopen_min_s",), "need 0 < reopen_min_s <= reopen_max_s")


@dataclass(frozen=True)
class VoiceModelSettings:
    """One voice: a model and how to run it."""

    model: str = "default"
    """`default` (the packaged en_US-joe-medium voice), a voice name, or a path to a Piper *.onnx voice."""

    threads: int | None = None
    """Inference threads; None = one per inference core (cpu.inference_cores)."""

    streaming: bool = False
    """Decode each sentence in windows: first audio in tens of ms instead of a whole
    sentence's synthesis, at ~10 % more total CPU (docs/streaming.md); Piper voices only."""

    fast_start_ids: int = 0
    """With streaming: a first sentence longer than 1.5x this many phoneme ids starts from
    the encoder run on its first ids only (first audio no longer grows with its length; its
    first words differ slightly from whole-sentence output).  0 = off (exact)."""

    length_scale: float | None = None
    """Speech duration multiplier (>1 slower); None = the voice's own."""

    noise_scale: float | None = None
    """Expressiveness noise; 0 = deterministic; None = the voice's own."""

    noise_w: float | None = None
    """Rhythm noise; 0 = deterministic; None = the voice's own."""

    speaker_id: int | None = None
    """Speaker of a multi-speaker voice; None = the first."""

    def validate(self) -> None:
        if not self.model:
            raise _FieldError(("model",), "must not be empty")
        # A missing model file is not a config error (issue 6): the daemon starts without the
        # voice, plays clips, and reports `degraded: voice` with the loader's reason.
        if self.threads is not None and not 1 <= self.threads <= 64:
            raise _FieldError(("threads",), "must be 1-64")
        if not 0 <= self.fast_start_ids <= 4096:
            raise _FieldError(("fast_start_ids",), "must be 0-4096 (0 = off)")
        if self.fast_start_ids and not self.streaming:
            raise _FieldError(("fast_start_ids",), "needs streaming: true")
        if self.length_scale is not None and not 0.1 <= self.length_scale <= 10:
            raise _FieldError(("length_scale",), "must be 0.1-10")
        for name in ("noise_scale", "noise_w"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 2:
                raise _FieldError((name,), "must be 0-2")


@dataclass(frozen=True)
class VoiceSettings(VoiceModelSettings):
    """The default voice, used when an announcement names none."""

    name: str = "default"
    """The name announcements use to choose this voice (`"voice": "<name>"`)."""

    def validate(self) -> None:
        super().validate()
        if not _NAME_RE.match(self.name):
            raise _FieldError(("name",), f"{self.name!r} is not a valid voice name")


@dataclass(frozen=True)
class QueueSettings:
    """Scheduling of announcements."""

    max_length: int = 32
    """Announcements waiting at most; a further one is rejected (or displaces a lower one)."""

    default_priority: Priority = "normal"
    """Priority of an announcement that names none (and of plain-text payloads)."""

    default_ttl_s: float | None = 600.0
    """Seconds an announcement without ttl/expires_at may wait before it expires; None = never."""

    on_preempt: Literal["resume", "drop"] = "resume"
    """An interrupted announcement is resumed from its sentence, or dropped."""

    dedup_window_s: float = 3600.0
    """Seconds an announcement id is remembered, so a duplicate plays once."""

    max_text_chars: int = 2000
    """Longest text accepted, characters."""

    max_repeat: int = 5
    """Largest `repeat` accepted."""

    def validate(self) -> None:
        if not 1 <= self.max_length <= 10000:
            raise _FieldError(("max_length",), "must be 1-10000")
        if self.default_ttl_s is not None and self.default_ttl_s <= 0:
            raise _FieldError(("default_ttl_s",), "must be > 0 (or null for never)")
        if self.dedup_window_s < 0:
            raise _FieldError(("dedup_window_s",), "must be >= 0")
        if not 1 <= self.max_text_chars <= 100000:
            raise _FieldError(("max_text_chars",), "must be 1-100000")
        if not 1 <= self.max_repeat <= 100:
            raise _FieldError(("max_repeat",), "must be 1-100")


@dataclass(frozen=True)
class ClipSettings:
    """Prerecorded clips and chimes."""

    dir: str | None = None
    """Directory of `<name>.wav` files (any rate, width, channels); None = no clips (every clip is unknown)."""


def _check_clip_name(path: tuple[str, ...], name: str | None) -> None:
    if name is not None and not _CLIP_NAME_RE.match(name):
        raise _FieldError(path, f"{name[:80]!r} is not a clip name (letters, digits, - and _ only)")


@dataclass(frozen=True)
class FallbackRule:
    """A regex on the announcement text and the clip it falls back to."""

    match: str
    """Regular expression, searched case-insensitively in the text (e.g. `fire|evacuat`)."""

    clip: str
    """Clip name played when speech cannot be produced for a matching text."""

    def validate(self) -> None:
        try:
            re.compile(self.match)
        except re.error as exc:
            raise _FieldError(("match",), f"bad regular expression: {exc}") from None
        _check_clip_name(("clip",), self.clip)


@dataclass(frozen=True)
class FallbackSettings:
    """What plays when speech cannot be produced in time (issue 6)."""

    default_clip: str | None = None
    """Clip played when no announcement field and no rule chose one; None = the announcement fails."""

    deadline_ms: int = 4000
    """Milliseconds from an announcement's turn to its first speech audio before the fallback clip plays."""

    rules: tuple[FallbackRule, ...] = ()
    """First matching rule (regex on the text) chooses the clip, before default_clip."""

    def validate(self) -> None:
        _check_clip_name(("default_clip",), self.default_clip)
        if not 50 <= self.deadline_ms <= 600000:
            raise _FieldError(("deadline_ms",), "must be 50-600000")


@dataclass(frozen=True)
class CacheSettings:
    """The phrase cache: synthesized audio kept on disk (issue 6)."""

    dir: str | None = None
    """Folder of cached phrases; None = `$CACHE_DIRECTORY/phrases` under systemd (CacheDirectory=), else no cache."""

    max_mb: float = 200.0
    """Megabytes (10^6 bytes) the folder may hold; least recently used phrases go first; 0 = no cache."""

    min_uses: int = 1
    """A phrase is written when it is synthesized for the n-th time since the daemon started
    (1 = at once; 2 spares an SD card the texts that come only once)."""

    def validate(self) -> None:
        if self.max_mb < 0:
            raise _FieldError(("max_mb",), "must be >= 0")
        if not 1 <= self.min_uses <= 100:
            raise _FieldError(("min_uses",), "must be 1-100")

    def resolved_dir(self) -> Path | None:
        """The folder in use, or None when the cache is off."""
        if self.max_mb <= 0:
            return None
        if self.dir is not None:
            return Path(self.dir)
        systemd = os.environ.get("CACHE_DIRECTORY")
        return Path(systemd.split(":")[0]) / "phrases" if systemd else None


@dataclass(frozen=True)
class LoudnessSettings:
    """One loudness for clips and speech (gated RMS level, see edgetts/loudness.py)."""

    target_dbfs: float | None = None
    """dBFS clips and every voice are brought to; None = the default voice's own level (speech untouched)."""

    def validate(self) -> None:
        if self.target_dbfs is not None and not -60.0 <= self.target_dbfs <= 0.0:
            raise _FieldError(("target_dbfs",), "must be -60 to 0 dBFS")


@dataclass(frozen=True)
class LoggingSettings:
    """Logging (to journald under systemd, stderr otherwise)."""

    level: Literal["debug", "info", "warning", "error"] = "info"
    """Lowest level logged."""


@dataclass(frozen=True)
class Config:
    """The whole daemon configuration."""

    device: DeviceSettings = field(default_factory=DeviceSettings)
    mqtt: MqttSettings = field(default_factory=MqttSettings)
    audio: AudioSettings = field(default_factory=AudioSettings)
    voice: VoiceSettings = field(default_factory=VoiceSettings)
    voices: dict[str, VoiceModelSettings] = field(default_factory=dict)
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

    def validate(self) -> None:
        try:
            Lexicon.from_mapping(self.lexicon)
        except ValueError as exc:
            raise _FieldError(("lexicon",), str(exc)) from None
        for name in self.voices:
            if not _NAME_RE.match(name):
                raise _FieldError(("voices", name), f"{name!r} is not a valid voice name")
            if name == self.voice.name:
                raise _FieldError(("voices", name), "same name as voice/name")

    # -- derived values, so no caller recomputes them differently
    def text_options(self) -> TextOptions:
        """How every voice prepares text: the normaliser's options and the site lexicon."""
        lexicon = Lexicon.from_mapping(self.lexicon) if self.lexicon else None
        return TextOptions(normalize_options=self.normalize, lexicon=lexicon)

    def all_voices(self) -> dict[str, VoiceModelSettings]:
        """Every configured voice by name, the default one first."""
        return {self.voice.name: self.voice, **self.voices}

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
    def announce_topics(self) -> tuple[str, ...]:
        prefix = self.mqtt.topic_prefix
        topics = [f"{self.base_topic}/announce", f"{prefix}/all/announce"]
        topics += [f"{prefix}/group/{g}/announce" for g in self.device.groups]
        return tuple(topics)

    def to_dict(self) -> dict[str, Any]:
        """The effective config as plain data (what print-config shows)."""
        return _to_plain(self)


def _to_plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: _to_plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_to_plain(v) for v in value]
    return value


# ------------------------------------------------------------------ the loader


class _Located:
    """Plain data from YAML plus the line of every key path."""

    def __init__(self) -> None:
        self.lines: dict[tuple[str, ...], int] = {}

    def line_of(self, path: tuple[str, ...]) -> int:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), 1)


def _plain(node: yaml.Node, path: tuple[str, ...], loc: _Located, problems: list[str], name: str) -> Any:
    """Turn a composed YAML node into plain data, recording lines and duplicate keys."""
    loc.lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = str(_scalar(key_node))
            sub = path + (key,)
            if key in out:
                problems.append(f"{name}:{key_node.start_mark.line + 1} {'/'.join(sub)}: duplicate key")
                continue
            loc.lines[sub] = key_node.start_mark.line + 1
            out[key] = _plain(value_node, sub, loc, problems, name)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_plain(v, path + (str(i),), loc, problems, name) for i, v in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    """Let the safe loader resolve a scalar's tag (int, float, bool, null, str)."""
    return yaml.SafeLoader("").construct_object(node, deep=True)


def _type_name(tp: Any) -> str:
    mapping = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}
    if tp in mapping:
        return mapping[tp]
    if typing.get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    return getattr(tp, "__name__", str(tp))


def _convert(tp: Any, value: Any, path: tuple[str, ...]) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, value, path)
            except _FieldError as exc:
                errors.append(_type_name(arg))
                last = exc
        if len(errors) == 1:
            raise last
        raise _FieldError(path, f"expected {' or '.join(errors)}, got {value!r}")
    if origin is Literal:
        choices = typing.get_args(tp)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)  # `protocol: 5` means "5"
        if value not in choices:
            raise _FieldError(path, f"expected {_type_name(tp)}, got {value!r}")
        return value
    if origin is tuple:
        (item_tp, _ellipsis) = typing.get_args(tp)
        if not isinstance(value, list):
            raise _FieldError(path, f"expected a list, got {value!r}")
        return tuple(_convert(item_tp, v, path + (str(i),)) for i, v in enumerate(value))
    if origin is dict:
        _key_tp, item_tp = typing.get_args(tp)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise _FieldError(path, f"expected a mapping, got {value!r}")
        return {k: _convert(item_tp, v, path + (k,)) for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return _build(typing.cast(type, tp), value, path)
    if tp is bool:
        if not isinstance(value, bool):
            raise _FieldError(path, f"expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _FieldError(path, f"expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _FieldError(path, f"expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise _FieldError(path, f"expected a string, got {value!r}")
        return value
    raise TypeError(f"unsupported config type {tp!r}")  # a bug in this module, not in the file


def _build(cls: type, data: Any, path: tuple[str, ...]) -> Any:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _FieldError(path, f"expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    for key in data:
        if key not in names:
            raise _FieldError(path + (key,), f"unknown key (known: {', '.join(sorted(names))})")
    for f in dataclasses.fields(cls):
        if f.name not in data and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise _FieldError(path + (f.name,), "required key missing")
    kwargs = {k: _convert(hints[k], v, path + (k,)) for k, v in data.items()}
    obj = cls(**kwargs)
    validate = getattr(obj, "validate", None)
    if validate is not None:
        try:
            validate()
        except (_FieldError, RuntimeConfigError) as exc:
            raise _FieldError(path + exc.path, exc.problem) from None
    return obj


def _collect(cls: type, data: dict[str, Any], loc: _Located, name: str) -> tuple[Any, list[str]]:
    """Build section by section so one run reports a problem in every broken section."""
    problems: list[str] = []

    def report(exc: _FieldError) -> None:
        problems.append(f"{name}:{loc.line_of(exc.path)} {'/'.join(exc.path)}: {exc.problem}")

    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in names:
            report(_FieldError((key,), f"unknown section (known: {', '.join(sorted(names))})"))
            continue
        try:
            kwargs[key] = _convert(hints[key], value, (key,))
        except _FieldError as exc:
            report(exc)
    if problems:
        return None, problems
    obj = cls(**kwargs)
    try:
        obj.validate()
    except _FieldError as exc:
        report(exc)
        return None, problems
    return obj, problems


def parse_config(text: str, name: str = "<config>") -> Config:
    """Parse YAML text into a :class:`Config`; raises :class:`ConfigError`."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError([f"{name}:{line} (yaml): {problem}"]) from None
    if node is None:
        return Config()
    loc = _Located()
    problems: list[str] = []
    data = _plain(node, (), loc, problems, name)
    if not isinstance(data, dict):
        raise ConfigError([f"{name}:1 (top): expected a mapping of sections"])
    config, more = _collect(Config, data, loc, name)
    problems += more
    if problems:
        raise ConfigError(problems)
    return config


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a config file; raises :class:`ConfigError` (one line per problem)."""
    name = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError([f"{name}:1 (file): cannot read: {reason}"]) from None
    return parse_config(text, name)


def dump_config(config: Config) -> str:
    """The effective config as YAML (what `edgetts print-config` prints)."""
    return yaml.safe_dump(config.to_dict(), sort_keys=False, default_flow_style=False)
