"""Evaluation of the IndexPool model against its baselines: ``indexpool eval qa|summarize|niah``.

See :mod:`model.research.evaluation.cli` for the command line, :mod:`model.research.evaluation.systems` for how a
system plugs in, and :mod:`model.research.evaluation.datasets` for the conversion of the shared development data.
"""
