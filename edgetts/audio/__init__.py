"""Audio out: the one converter to the device format, the stream protocol, play-out jobs,
the player thread, WAV files, loudness (the sound card itself is edgetts.daemon.playout.sound_card)."""
