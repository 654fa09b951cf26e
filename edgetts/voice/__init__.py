"""Voices: the ONNX sessions, Piper (VITS) and autoregressive models behind engine.Voice."""
