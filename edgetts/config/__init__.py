"""The YAML configuration: typed sections, one loader, errors naming file, line and key.

Importers use this package's names; which module of it holds each is its own business:
``sections`` and ``bus`` (one dataclass per YAML section), ``document`` (:class:`Config`,
the whole file), ``loader`` (YAML in and out), ``errors``.
"""

from edgetts.config.bus import DeviceSettings, MqttSettings, TlsSettings
from edgetts.config.document import Config
from edgetts.config.errors import ConfigError, problem_line
from edgetts.config.http import HttpSettings
from edgetts.config.integrations import HomeAssistantSettings, WyomingSettings
from edgetts.config.loader import DEFAULT_CONFIG_PATH, dump_config, key_line, load_config, parse_config
from edgetts.config.sections import (
    AudioSettings,
    CacheSettings,
    ClipSettings,
    FallbackRule,
    FallbackSettings,
    LoggingSettings,
    LoudnessSettings,
    QueueSettings,
    VoiceModelSettings,
    VoiceSettings,
)
from edgetts.config.sync import SyncSettings

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "AudioSettings",
    "CacheSettings",
    "ClipSettings",
    "Config",
    "ConfigError",
    "DeviceSettings",
    "FallbackRule",
    "FallbackSettings",
    "HomeAssistantSettings",
    "HttpSettings",
    "LoggingSettings",
    "LoudnessSettings",
    "MqttSettings",
    "QueueSettings",
    "SyncSettings",
    "TlsSettings",
    "VoiceModelSettings",
    "VoiceSettings",
    "WyomingSettings",
    "dump_config",
    "key_line",
    "load_config",
    "parse_config",
    "problem_line",
]
