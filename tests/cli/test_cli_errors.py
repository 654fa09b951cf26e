"""One error line and nothing else (issue 13 item 5): unwritable output, a missing config file,
and `check-config` finding that a configured voice model does not exist."""

from __future__ import annotations

from pathlib import Path

from test_cli import assert_one_line_error, edgetts


def test_synth_into_a_missing_folder_prints_only_its_error(tmp_path: Path) -> None:
    result = edgetts("synth", "Hello.", "-o", str(tmp_path / "no-such-dir" / "x.wav"))
    assert_one_line_error(result, "cannot write")
    assert result.stderr.strip().splitlines() == [
        f"edgetts: error: cannot write {tmp_path / 'no-such-dir' / 'x.wav'}: No such file or directory"
    ]
    assert not (tmp_path / "no-such-dir").exists()


def test_a_missing_config_file_is_an_edgetts_error(tmp_path: Path) -> None:
    for verb in (["check-config", str(tmp_path / "none.yaml")], ["run", "--config", str(tmp_path / "none.yaml")]):
        result = edgetts(*verb)
        assert result.returncode == 1
        assert_one_line_error(result, f"{tmp_path / 'none.yaml'}:1 (file): cannot read: No such file")


def test_check_config_names_file_line_and_key_of_a_voice_model_that_does_not_exist(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "device:\n  id: x\nvoice:\n  name: main\n  model: /no/such/voice.onnx\n"
        f"voices:\n  fr:\n    model: klingon\n  folder:\n    model: {tmp_path}\n  ok:\n    model: default\n"
    )
    result = edgetts("check-config", str(config))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"{config}:5 voice/model: voice model not found: /no/such/voice.onnx",
        f"{config}:8 voices/fr/model: no voice named 'klingon'"
        " (see `edgetts voices`; `edgetts voices install NAME` adds one)",
        f"{config}:10 voices/folder/model: voice model not found: {tmp_path}",
    ]
    assert result.stdout == ""
    config.write_text("voice:\n  model: default\n")
    good = edgetts("check-config", str(config))
    assert good.returncode == 0 and good.stdout.strip() == f"{config}: ok", good.stderr
