"""How a message becomes a queued announcement: bytes checked (intake), messages that killed the
daemon kept out (journal), payloads parsed (messages), admitted or refused (admit), duplicates
dropped (dedup), and the queue in priority order (scheduler)."""
