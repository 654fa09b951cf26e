"""Text in: SSML, lexicon, the normaliser, and the segments a voice speaks."""
