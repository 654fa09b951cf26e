"""Home Assistant's MQTT discovery of this device (issue 17): edgetts.daemon.inbound.homeassistant.service."""
