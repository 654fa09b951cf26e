"""Where messages come in: MQTT, the HTTP console, Wyoming, Home Assistant, and who may stop what.

Every front door only parses and hands an :class:`~edgetts.daemon.inbound.mqtt.Inbound` to the
loop; none of them decides anything about the queue.
"""
