"""CLI: what the Invoke tasks show on the terminal.

``console`` holds the rich console, the run's progress reporter and the one way every task
prints an error (``error: ...`` and ``remedy: ...``); ``render`` turns specs, result rows and
tables into rich tables. The library never imports this package or invoke.
"""
