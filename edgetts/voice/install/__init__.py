"""Voices installed by name: Piper's catalog, checked downloads, offline files, the voices folder.

A library layer: it takes plain values (a base URL, a folder, names) and knows nothing of the
config or the daemon; ``edgetts voices`` (edgetts/cli/voices.py) drives it.  ``index`` reads the
catalog, ``fetch`` downloads and checks, ``offline`` reads a file or an archive, ``store`` is the
voices folder, ``install`` puts them together.  Nothing is imported here: the daemon, which only
looks voices up in the folder (``store``), never loads the download code (urllib, tarfile, zipfile)
into a board's memory, and never fetches anything.
"""
