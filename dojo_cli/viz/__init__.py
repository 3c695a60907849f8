"""Visualisation: meshcat replay and standalone HTML (the only meshcat user, and the
only place that reorders quaternions), and matplotlib pictures of scenes and runs."""
