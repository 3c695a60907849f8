"""`dojo replay` (registered on the app by dojo_cli.cli.app)."""
