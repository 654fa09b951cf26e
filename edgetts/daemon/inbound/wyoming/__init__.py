"""The Wyoming TTS server (issue 17): Home Assistant's local voice protocol.

``wire`` reads and writes events (bounded), ``voices`` answers `describe` and picks a request's
voice, ``session`` serves one client, ``audio_announcer`` takes announcement audio, ``server`` listens
(on its own asyncio thread), ``mdns`` advertises it, ``service`` runs it inside the daemon.
"""
