"""The answer model: pure functions from measured tables (and a study manifest) to verdicts.

Every word a verdict can be lives in ``verdicts``; the rules that give them live here, one module per kind
of answer, and the views (terminal, Markdown, HTML, JSON) only render what these return.
"""
