"""Helpers every app may use, below all of them: it imports no project package.

Plain text from uploaded bytes, the one CSV writer, upload checks and query-parameter
checks. Nothing here knows about cases, juries or studies.
"""
