"""Views: what renders the answer model (dlrepro.answers.model, .study) and decides nothing.

``report`` and ``study_report`` write Markdown and self-contained HTML (``templates/``), ``plots`` and
``study_plots`` draw the figures, ``palette`` and ``numbers`` give one colour and one number format to every view
(the terminal's is dlrepro.cli.render). A view imports no verdict rule: only the model and the verdict words
(tests/project/test_layers.py checks it).
"""
