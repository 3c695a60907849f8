"""The command modules of ``dojo``, one module per command or per small family of commands.

cli/app.py lists them in COMMANDS and imports a command's module only when that command
runs, so this package imports nothing: ``dojo --help`` stays free of every command's
libraries (tests/test_imports.py).
"""
