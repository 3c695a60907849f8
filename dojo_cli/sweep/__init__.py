"""Batch work: sweep files (plan), one run as a task (task), running them locally or on
Dask (execute), the manifest (manifest), and the expressions and metrics evaluated on a
stored run (metrics; also `dojo info --get`)."""
