"""What the URDF and MJCF importers share, one module a concept.

- ``xml_file``: an importer's XML file read (lxml, line numbers kept; the lenient repairs of
  the URDF reader) with its problems at ``file:line``;
- ``mass``: masses, centres and inertias summed by the parallel-axis rule;
- ``meshes``: a mesh file's vertices (trimesh);
- ``rotations``: a rotation about an axis (Rodrigues), for the importers and the scene tools
  beside them (``floating_base``, ``stand``);
- ``scene_data``: the plain scene data the importers write (numbers, shapes) and the
  distance at which their contacts start;
- ``messages``: how their problems and notes list names and name the recovery's time constant.

It imports neither importer (``tests/test_project.py``, ``test_scene_packages_import_one_way``).
"""
