"""Programs that talk to running daemons over MQTT: ``edgetts announce`` and ``edgetts fleet``.
They never run inside the daemon."""
