"""The YAML configuration: typed sections, one loader, errors naming file, line and key.

Importers use this package's names; which module of it holds each is its own business.
"""

from edgetts.config.loader import (
    DEFAULT_CONFIG_PATH,
    Config,
    ConfigError,
    MqttSettings,
    VoiceModelSettings,
    dump_config,
    load_config,
    parse_config,
)

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "Config",
    "ConfigError",
    "MqttSettings",
    "VoiceModelSettings",
    "dump_config",
    "load_config",
    "parse_config",
]
