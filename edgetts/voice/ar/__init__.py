"""Autoregressive speech-token voices (CosyVoice 2/3 style) on onnxruntime, CPU only.

A Qwen2-style decoder (``lm.onnx``) emits speech tokens one at a time against a
block-wise KV cache allocated once at load time; a token-to-waveform decoder
(``decoder.onnx``) turns them into audio in chunks while the LM keeps going.
The contract (manifest fields, model inputs and outputs) is in docs/ar-voices.md.

Only onnxruntime and numpy are needed at run time.
"""

from edgetts.voice.ar.kv_cache import BlockPool, KvCapacityError, KvLayout, KvSequence, SharedPrefix
from edgetts.voice.ar.manifest import AR_FORMAT, ArManifest, is_ar_manifest, load_manifest

__all__ = [
    "AR_FORMAT",
    "ArManifest",
    "BlockPool",
    "KvCapacityError",
    "KvLayout",
    "KvSequence",
    "SharedPrefix",
    "is_ar_manifest",
    "load_manifest",
]
