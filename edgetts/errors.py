"""Errors the engine raises: each carries one line a person can act on."""


class EdgeTTSError(Exception):
    """Base class of every error edgetts reports to a user in one line."""


class VoiceError(EdgeTTSError):
    """A voice could not be found, read or loaded (missing file, bad JSON, bad model)."""


class PhonemizerError(EdgeTTSError):
    """espeak-ng could not be loaded or initialised."""


class UnspeakableTextError(EdgeTTSError):
    """The text holds nothing that can be spoken (empty, only punctuation or symbols)."""


class SynthesisError(EdgeTTSError):
    """The model ran but produced no usable audio (NaN, wrong shape, runtime failure)."""


class AudioDeviceError(EdgeTTSError):
    """No usable audio output device, or it failed while playing."""
