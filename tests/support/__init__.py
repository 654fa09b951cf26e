"""Shared test rigs: broker, ALSA capture, notify socket, probe, fake voices, PCM helpers."""
