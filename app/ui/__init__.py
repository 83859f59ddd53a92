"""The web app: ``app.ui.app.serve`` (``indexpool serve``) and one module per tab."""
