"""`dojo draw` and `dojo plot` (registered on the app by dojo_cli.cli.app)."""
