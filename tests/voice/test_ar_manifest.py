"""edgetts-ar-1 manifests: a bad or missing field gives a VoiceError naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgetts.errors import VoiceError
from edgetts.voice.ar.manifest import is_ar_manifest, load_manifest

from tools.make_ar_test_voice import make_voice


@pytest.fixture(scope="module")
def voice_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("arvoice")
    make_voice(d)
    return d


def edited(voice_dir: Path, tmp_path: Path, edit) -> Path:
    data = json.loads((voice_dir / "voice.json").read_text())
    edit(data)
    for f in ("lm.onnx", "decoder.onnx"):
        (tmp_path / f).symlink_to(voice_dir / f)
    p = tmp_path / "voice.json"
    p.write_text(json.dumps(data))
    return p


def test_good_manifest_loads(voice_dir):
    m = load_manifest(voice_dir / "voice.json")
    assert m.sample_rate == 24000 and m.kv.block_size == 8 and m.stop_ids == (290,)
    assert m.prefix_ids()[0] == m.sos and m.lm_path.name == "lm.onnx"
    assert is_ar_manifest(voice_dir / "voice.json")
    assert not is_ar_manifest(voice_dir / "lm.onnx")


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d.update(format="piper"), "format"),
        (lambda d: d["lm"].update(path="missing.onnx"), "lm/path"),
        (lambda d: d["decoder"].pop("path"), "decoder/path"),
        (lambda d: d["decoder"].update(samples_per_token=0), "decoder/samples_per_token"),
        (lambda d: d["decoder"].update(crossfade_samples=5000), "decoder/crossfade_samples"),
        (lambda d: d.pop("sample_rate"), "sample_rate"),
        (lambda d: d.update(sample_rate="24k"), "sample_rate"),
        (lambda d: d.update(layout="weird"), "layout"),
        (lambda d: d["kv"].update(block_size=0), "kv/block_size"),
        (lambda d: d["kv"].pop("num_layers"), "kv/num_layers"),
        (lambda d: d["tokens"].update(sos=10_000), "tokens/sos"),
        (lambda d: d["tokens"].update(stop=[]), "tokens/stop"),
        (lambda d: d["tokens"].update(stop=[260]), "tokens/stop"),
        (lambda d: d["tokens"].update(speech_vocab_size=100), "tokens/speech_vocab_size"),
        (lambda d: d["prompt"].update(speech_tokens=[1, 99]), "prompt/speech_tokens[1]"),
        (lambda d: d["prompt"].update(text_ids="abc"), "prompt/text_ids"),
        (lambda d: d["sampling"].update(top_p=1.5), "sampling/top_p"),
        (lambda d: d["sampling"].update(top_k=True), "sampling/top_k"),
        (lambda d: d.update(tokenizer=[]), "tokenizer"),
    ],
)
def test_bad_field_is_named(voice_dir, tmp_path, edit, field):
    with pytest.raises(VoiceError) as err:
        load_manifest(edited(voice_dir, tmp_path, edit))
    msg = str(err.value)
    assert f" {field}:" in msg and "\n" not in msg, msg


def test_missing_and_broken_files(tmp_path):
    with pytest.raises(VoiceError, match="cannot read voice manifest"):
        load_manifest(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(VoiceError, match="not valid JSON"):
        load_manifest(tmp_path / "bad.json")


def test_voice_load_rejects_bad_tokenizer_and_tiny_kv_limit(voice_dir, tmp_path):
    from edgetts.voice.ar.voice import ArVoice

    p = edited(voice_dir, tmp_path, lambda d: d.update(tokenizer={"type": "bpe"}))
    with pytest.raises(VoiceError, match="tokenizer/type"):
        ArVoice.load(p)
    (tmp_path / "voice.json").unlink()
    data = json.loads((voice_dir / "voice.json").read_text())
    data["kv"]["max_sequence_tokens"] = 4
    (tmp_path / "voice.json").write_text(json.dumps(data))
    with pytest.raises(VoiceError, match="kv/max_sequence_tokens"):
        ArVoice.load(tmp_path / "voice.json")


def test_wrong_kv_shape_for_the_lm(voice_dir, tmp_path):
    from edgetts.voice.ar.voice import ArVoice

    with pytest.raises(VoiceError, match="head_dim"):
        ArVoice.load(edited(voice_dir, tmp_path, lambda d: d["kv"].update(head_dim=32)))


def test_corrupt_model_file_is_a_voice_error(voice_dir, tmp_path):
    from edgetts.voice.ar.voice import ArVoice

    data = json.loads((voice_dir / "voice.json").read_text())
    (tmp_path / "lm.onnx").write_bytes(b"not a model")
    (tmp_path / "decoder.onnx").symlink_to(voice_dir / "decoder.onnx")
    (tmp_path / "voice.json").write_text(json.dumps(data))
    with pytest.raises(VoiceError, match="lm.onnx"):
        ArVoice.load(tmp_path / "voice.json")


def test_vocab_tokenizer_greedy_longest_match(tmp_path):
    from edgetts.voice.ar.tokenizer import Tokenizer

    (tmp_path / "vocab.json").write_text(
        json.dumps({"h": 1, "he": 2, "hell": 3, "o": 4, " ": 5, "w": 6, "or": 7, "ld": 8})
    )
    tok = Tokenizer.from_manifest({"type": "vocab", "path": "vocab.json", "unk_id": 0}, tmp_path)
    assert tok.encode("hello world") == [3, 4, 5, 6, 7, 8]
    assert tok.encode("hex") == [2, 0]
    no_unk = Tokenizer.from_manifest({"type": "vocab", "path": "vocab.json"}, tmp_path)
    assert no_unk.encode("hex") == [2]
    with pytest.raises(VoiceError, match="tokenizer/path"):
        Tokenizer.from_manifest({"type": "vocab", "path": "missing.json"}, tmp_path)
