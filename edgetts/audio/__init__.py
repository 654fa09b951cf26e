"""Audio out: the device format, play-out jobs, the player thread, WAV files, loudness."""
