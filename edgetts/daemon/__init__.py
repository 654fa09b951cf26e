"""The announcer daemon: MQTT in, queue, play-out; one loop owns the state."""
