"""Where robot descriptions live: ``package://`` search paths and example-robot-data.

A URDF names its meshes (and a scene may name its URDF) as
``package://<package>/<path>``, the ROS convention: ``<package>`` is a folder
found in one of the directories of a search path. The search path is, in order:
the directories given by the caller (``--package-path``, a scene's
``import.package_path``), those of the environment variable ``DOJO_PACKAGE_PATH``
(``os.pathsep``-separated, like ``ROS_PACKAGE_PATH``, which is read after it),
the share folder of the PyPI package example-robot-data when it is installed
(the ``robots`` extra, ``pip install 'dojo_cli[robots]'``), and finally the
folders above the URDF file itself (a robot folder carried around whole).

example-robot-data is a cmeel package: its files are installed under
``site-packages/cmeel.prefix/share/example-robot-data/``, found here through the
distribution's file list (importlib.metadata), never by guessing a prefix.
"""

from __future__ import annotations

import functools
import os
from importlib import metadata
from pathlib import Path

ROBOT_DATA_DISTRIBUTION = "example-robot-data"
"""The PyPI distribution that ships the robot descriptions (a cmeel package)."""
ROBOT_DATA_PACKAGE = "example-robot-data"
"""Its ROS package name, as written in ``package://example-robot-data/...``."""
ROBOTS_EXTRA_INSTALL = "pip install 'dojo_cli[robots]'"
"""The command that installs example-robot-data with dojo_cli."""
PACKAGE_PATH_VARIABLES = ("DOJO_PACKAGE_PATH", "ROS_PACKAGE_PATH")
"""Environment variables read for more package directories, in this order."""
PACKAGE_SCHEME = "package://"
FILE_SCHEME = "file://"
# The package.xml marking the package's own folder inside the distribution.
_MARKER = f"share/{ROBOT_DATA_PACKAGE}/package.xml"
# How many folders above a URDF file are searched for its package.
_URDF_ANCESTORS = 4


@functools.lru_cache(maxsize=1)
def example_robot_data_root() -> Path | None:
    """The installed example-robot-data package folder (holding ``robots/``), or None."""
    try:
        dist = metadata.distribution(ROBOT_DATA_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    for file in dist.files or []:
        if str(file).replace("\\", "/").endswith(_MARKER):
            folder = Path(str(dist.locate_file(file))).parent
            if (folder / "robots").is_dir():
                return folder
    return None


def robot_data_available() -> bool:
    """Whether example-robot-data is installed (with its robot folders)."""
    return example_robot_data_root() is not None


def package_search_path(extra: list[str | os.PathLike] | None = None, urdf_file: str | os.PathLike | None = None) -> list[Path]:
    """The directories searched for ``package://<package>/...``, in order.

    Args:
        extra: directories given explicitly (searched first).
        urdf_file: the URDF being read: the folders above it are searched last.
    """
    dirs = [Path(d).expanduser() for d in (extra or [])]
    for variable in PACKAGE_PATH_VARIABLES:
        dirs += [Path(d) for d in os.environ.get(variable, "").split(os.pathsep) if d]
    root = example_robot_data_root()
    if root is not None:
        # share/ holds example-robot-data itself; robots/ holds the robot folders,
        # which some of its URDFs name as packages (package://b1_description/...)
        dirs += [root.parent, root / "robots"]
    if urdf_file is not None:
        dirs += list(Path(os.path.abspath(urdf_file)).parents)[:_URDF_ANCESTORS]
    return list(dict.fromkeys(dirs))


class UnresolvedPackage(LookupError):
    """A ``package://`` name whose package is in no directory of the search path.

    Attributes:
        package: the package name.
        searched: the directories searched.
    """

    def __init__(self, package: str, searched: list[Path]):
        self.package = package
        self.searched = searched
        super().__init__(package)

    def hint(self) -> str:
        """What to do about it, for an error message."""
        if self.package == ROBOT_DATA_PACKAGE:
            return f"the package {self.package!r} is not installed ({ROBOTS_EXTRA_INSTALL})"
        shown = ", ".join(str(d) for d in self.searched[:4]) + (", ..." if len(self.searched) > 4 else "")
        return f"package {self.package!r} not found in the search path ({shown or 'empty'}); add its parent folder with --package-path"


def resolve_resource(name: str, base_dir: Path, search_path: list[Path]) -> Path:
    """The file a URDF resource name refers to (it may not exist).

    ``package://pkg/rest`` (also ``package:///pkg/rest``) -> ``<dir>/pkg/rest`` for the
    first search directory holding a folder ``pkg``; ``file://`` paths are absolute;
    other relative names resolve against ``base_dir`` (the URDF's folder).

    Raises:
        UnresolvedPackage: no search directory holds the package.
    """
    if name.startswith(PACKAGE_SCHEME):
        package, _, rest = name[len(PACKAGE_SCHEME):].lstrip("/").partition("/")
        for folder in search_path:
            try:
                found = (folder / package).is_dir()
            except OSError:  # a name the file system refuses (longer than NAME_MAX): not there
                found = False
            if found:
                return folder / package / rest
        raise UnresolvedPackage(package, search_path)
    if name.startswith(FILE_SCHEME):
        return Path(name[len(FILE_SCHEME):])
    path = Path(name).expanduser()
    return path if path.is_absolute() else base_dir / path
