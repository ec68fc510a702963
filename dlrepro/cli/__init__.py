"""CLI: what the Invoke tasks show on the terminal.

``tasks`` holds the tasks (the `dlrepro` command, ``main``, and `invoke` in the checkout run them),
``options`` the flags they share, ``console`` the rich console and the one way every task prints an
error (``error: ...`` and ``remedy: ...``), ``progress`` the run's progress bars, ``render`` and
``spec_view`` the tables. The library never imports this package or invoke.
"""
