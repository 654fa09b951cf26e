"""How the announcement whose turn it is gets played: its audio chosen (source_choice) from clips,
the phrase cache, synthesis or a fallback clip, synthesized (synthesis, and client_synthesis for
HTTP and Wyoming clients), and sent to the sound card (play)."""
