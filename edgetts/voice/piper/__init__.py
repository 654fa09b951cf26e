"""Piper (VITS) voices: phonemes -> ids -> audio, whole sentences or streamed."""
