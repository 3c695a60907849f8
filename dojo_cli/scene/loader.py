"""Read scene files into validated ``SceneSpec``s, with line numbers in every problem.

The YAML is composed once into a node tree (SafeLoader), which gives both the
plain data and a map from dotted field path (``bodies.0.mass``) to the 1-based
line of that field: the line of its key in a mapping, of its first token in a
list. pydantic-core's errors are turned into one ``Problem`` per issue: the error
location becomes a field path (dropping the tags pydantic-core inserts for unions,
``schema.UNION_TAGS``), its line is the field's line, or the enclosing field's
when the field is missing, and the message is a short one of ours. Fields set by
overrides are reported on ``--set`` instead of a line.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from pydantic_core import ErrorDetails, ValidationError

from dojo_cli.errors import Problem, SceneError, SceneFileError
from dojo_cli.scene.overrides import apply_override_items
from dojo_cli.scene.schema import SPEC_MODELS, UNION_TAGS, SceneSource, SceneSpec, SpecProblems, value_text
from dojo_cli.scene.urdf_scene import expand_urdf_scene, is_urdf_scene, unavailable_reason

SCENE_LIBRARY = "scenes"
"""Folder of the scene library: the repository's top-level ``scenes/`` (one subfolder per
group: ``scenes/basics/pendulum.yaml``), installed into the wheel as ``dojo_cli/scenes``
(CMakeLists.txt). Built-in scene names are the files' stems, unique across the groups."""

_SCENE_SUFFIX = ".yaml"

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
"""Largest scene document (UTF-8 bytes): over 100 times the largest built-in scene once
resolved (humanoid, 34 kB), small enough that reading it is instant."""
MAX_NESTING_DEPTH = 64
"""Deepest nesting of mappings and lists (the built-in scenes need at most 6:
bodies.0.visuals.0.color); the walks over the tree recurse once per level."""
MAX_EXPANDED_NODES = 100_000
"""Most nodes in a document counting each alias as the nodes it stands for: 30 times
the largest built-in scene once resolved (humanoid, 3,400 nodes). The line index and
the validation visit the expanded tree, so this bounds their work (about a second)."""
# pydantic-core's location element for a mapping key's own error
_KEY_LOCATION = "[key]"


# ----------------------------------------------------------- built-in scenes


def scene_library() -> Path | None:
    """The folder of the scene library, or None when none is installed.

    An installed package carries it as ``dojo_cli/scenes``; a source checkout (an editable
    install, or PYTHONPATH pointing at the repository) reads the repository's ``scenes/``
    itself, so there is one copy of every scene and editing it needs no reinstall.
    """
    package = Path(__file__).resolve().parents[1]
    for folder, marker in ((package / SCENE_LIBRARY, None), (package.parent / SCENE_LIBRARY, "pyproject.toml")):
        # a checkout's folder only next to its pyproject.toml: not some other "scenes" in site-packages
        if folder.is_dir() and (marker is None or (package.parent / marker).is_file()):
            return folder
    return None


@functools.lru_cache(maxsize=4)
def _scene_index(folder: Path | None) -> dict[str, Path]:
    """{name: file} of the library's scenes, sorted by name (a name seen twice: the first, by path)."""
    if folder is None:
        return {}
    index: dict[str, Path] = {}
    for path in sorted(folder.glob(f"*/*{_SCENE_SUFFIX}")):
        if path.is_file():
            index.setdefault(path.stem, path)
    return dict(sorted(index.items()))


def builtin_scene_names() -> list[str]:
    """Names of the built-in scenes, sorted (empty when none are installed)."""
    return list(_scene_index(scene_library()))


def builtin_scene_groups() -> dict[str, list[str]]:
    """The built-in scenes by group (the library's subfolder: basics, contact, ...), both sorted."""
    groups: dict[str, list[str]] = {}
    for name, path in _scene_index(scene_library()).items():
        groups.setdefault(path.parent.name, []).append(name)
    return dict(sorted(groups.items()))


def unknown_scene_message(name: str) -> str:
    """What to say of a scene that is neither a file nor a built-in: the close built-in names
    (a misspelling: "did you mean 'pendulum'?"), else every built-in name."""
    names = builtin_scene_names()
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    if close:
        return f"no such scene file or built-in scene {name!r}; did you mean {' or '.join(repr(c) for c in close)}?"
    return f"no such scene file or built-in scene {name!r} (built-in: {', '.join(names) or 'none'})"


def _unknown_scene(name: str) -> SceneError:
    return SceneError(Problem(name, None, "", unknown_scene_message(name)))


def builtin_scene_path(name: str) -> Path:
    """Path of a built-in scene file.

    Raises:
        SceneError: no built-in scene has that name.
    """
    path = _scene_index(scene_library()).get(name)
    if path is None:
        raise _unknown_scene(name)
    return path


def builtin_scene_text(name: str) -> str:
    """YAML text of a built-in scene.

    A robot scene whose URDF package is not installed here gets a first comment
    line saying so (``dojo scenes`` shows first comments): ``# [unavailable: ...]``.

    Raises:
        SceneError: no built-in scene has that name.
    """
    text = builtin_scene_path(name).read_text(encoding="utf-8")
    reason = builtin_scene_unavailable(name, text)
    if reason is not None:
        first = next((line.lstrip("#").strip() for line in text.splitlines() if line.strip().startswith("#")), "")
        text = f"# [unavailable: {reason}] {first}\n" + text
    return text


def builtin_scene_unavailable(name: str, text: str | None = None) -> str | None:
    """Why a built-in scene cannot be loaded on this machine (a missing package), or None."""
    if text is None:
        text = builtin_scene_path(name).read_text(encoding="utf-8")
    if "urdf:" not in text:
        return None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return unavailable_reason(data)


# ------------------------------------------------------------------- loading


def load_scene_spec(
    source: str | os.PathLike, overrides: Mapping[str, Any] | Sequence[str] | None = None
) -> SceneSpec:
    """Load and validate a scene file or a built-in scene.

    Args:
        source: path of a YAML scene file, or the name of a built-in scene (a
            file of that name takes precedence).
        overrides: {dotted path: value} or ``PATH=VALUE`` strings, applied
            before validation (see ``dojo_cli.scene.overrides``).

    Returns:
        The validated scene; relative paths in it resolve against the file's folder.

    Raises:
        SceneError: the scene cannot be found or read, or is invalid; one
            problem per issue, each with file, line and field path.
    """
    path = Path(source)
    name = str(source)
    file = name
    try:
        is_file, exists = path.is_file(), path.exists()
    except OSError as exc:  # a name the file system refuses (longer than NAME_MAX, ...): a bad name, exit 2
        raise SceneError(Problem(file, None, "", f"cannot read the file: {exc.strerror or exc}")) from None
    if is_file:
        return load_scene_spec_from_string(_read_scene_file(path, file), file, path.resolve().parent, overrides)
    if name in builtin_scene_names():
        builtin = builtin_scene_path(name)
        shown = f"{SCENE_LIBRARY}/{builtin.parent.name}/{builtin.name}"
        return load_scene_spec_from_string(builtin_scene_text(name), shown, builtin.parent, overrides)
    if exists:
        raise SceneFileError(Problem(file, None, "", "not a scene file (a directory?)"))
    if _looks_like_a_path(name):
        # a file name that is not there is an I/O problem (exit 3); a bare word that is
        # not a built-in is a misspelt name (exit 2, "did you mean")
        raise SceneFileError(Problem(file, None, "", "no such file"))
    raise _unknown_scene(name)


def _looks_like_a_path(name: str) -> bool:
    """A scene argument meant as a file: a YAML suffix or a folder in it (built-in names have neither)."""
    return name.endswith((".yaml", ".yml")) or "/" in name or os.sep in name


# The first bytes of an HDF5 file (the superblock's format signature, HDF5 File Format
# Specification, section II.A): a storage file (io/storage/format.py holds the same, beside
# h5py, which reading a scene does not import).
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
RUN_FILE_GIVEN_AS_SCENE = (
    "this is an HDF5 run file (written by `dojo simulate` or `dojo sweep`), not a YAML scene: give the scene "
    "(a built-in's name or a .yaml file), or read the run with `dojo info`, `dojo plot`, `dojo energy` "
    "or `dojo replay`"
)


def _read_scene_file(path: Path, file: str) -> str:
    """The text of a scene file, refused before reading when it is too large.

    Raises:
        SceneFileError: unreadable (exit code 3).
        SceneError: larger than MAX_DOCUMENT_BYTES, or not UTF-8.
    """
    try:
        with path.open("rb") as stream:
            head = stream.read(len(HDF5_SIGNATURE))
        if head == HDF5_SIGNATURE:  # a run file given where a scene is expected (`dojo draw run.h5`)
            raise SceneError(Problem(file, None, "", RUN_FILE_GIVEN_AS_SCENE))
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise SceneError(Problem(file, None, "", _too_large(size)))
        with path.open("rb") as stream:
            # one byte more than the limit: a file that grew since stat() is still caught
            data = stream.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        raise SceneFileError(Problem(file, None, "", f"cannot read the file: {exc.strerror or exc}")) from None
    if len(data) > MAX_DOCUMENT_BYTES:
        raise SceneError(Problem(file, None, "", _too_large(len(data))))
    return _decoded(data, file)


def _too_large(size: int) -> str:
    return f"the document is {size:,} bytes, more than the limit of {MAX_DOCUMENT_BYTES:,} bytes"


def _decoded(data: bytes, file: str) -> str:
    """UTF-8 bytes as text; invalid UTF-8 is a problem at its line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        message = f"not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r})"
        raise SceneError(Problem(file, line, "", f"cannot read the file: {message}")) from None


def load_scene_spec_from_string(
    text: str | bytes,
    file: str = "<string>",
    base_dir: str | os.PathLike | None = None,
    overrides: Mapping[str, Any] | Sequence[str] | None = None,
) -> SceneSpec:
    """Validate a scene given as YAML text.

    The entry point for scene text that is not a file of its own (the scene kept
    in a storage file, ``file`` naming it as ``run.h5:scene``): the same limits
    and checks as a scene file.

    Args:
        text: the YAML scene (bytes must be UTF-8).
        file: name of the text in problems.
        base_dir: folder relative paths resolve against (None: the current directory).
        overrides: as for ``load_scene_spec``.

    Raises:
        SceneError: invalid YAML, YAML beyond the limits, or an invalid scene.
    """
    if isinstance(text, (bytes, bytearray)):
        if len(text) > MAX_DOCUMENT_BYTES:
            raise SceneError(Problem(file, None, "", _too_large(len(text))))
        text = _decoded(bytes(text), file)
    elif not isinstance(text, str):
        raise SceneError(Problem(file, None, "", f"a scene must be YAML text, got {type(text).__name__}"))
    data, lines = _parse_yaml(text, file)
    source = SceneSource(file, _absolute_folder(base_dir), lines)
    if not isinstance(data, dict):
        what = "the file is empty" if data is None else f"got {value_text(data)}"
        message = f"a scene must be a mapping of fields (name, timestep, bodies, ...); {what}"
        raise SceneError(Problem(file, lines.get(""), "", message))
    return _validate(data, source, overrides)


def spec_from_dict(
    data: dict,
    file: str = "<dict>",
    overrides: Mapping[str, Any] | Sequence[str] | None = None,
    base_dir: str | os.PathLike | None = None,
) -> SceneSpec:
    """Validate a scene given as plain data (problems carry no line numbers).

    Args:
        data: the scene as YAML would read it (not modified).
        file: name of the data in problems.
        overrides: as for ``load_scene_spec``.
        base_dir: folder relative paths resolve against (None: the current directory).

    Raises:
        SceneError: an invalid scene.
    """
    source = SceneSource(file, _absolute_folder(base_dir))
    if not isinstance(data, Mapping):
        raise SceneError(Problem(file, None, "", f"a scene must be a mapping of fields, got {value_text(data)}"))
    return _validate(dict(data), source, overrides)


class _SceneDumper(yaml.SafeDumper):
    """Block-style mappings; lists of numbers on one line (``[0.0, 0.0, -9.81]``)."""


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.SequenceNode:
    flow = not any(isinstance(item, (list, dict)) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_SceneDumper.add_representer(list, _represent_list)


def dump_scene_data(data: dict) -> str:
    """Plain scene data as YAML, in the layout of ``dump_scene`` (keys in the given order)."""
    return yaml.dump(data, Dumper=_SceneDumper, sort_keys=False, default_flow_style=False, allow_unicode=True)


def dump_scene(spec: SceneSpec) -> str:
    """The full resolved scene as YAML, every default explicit; it loads back equal.

    Infinite values are written ``.inf``, which YAML reads back as infinity.
    """
    data = spec.dump()
    return yaml.dump(data, Dumper=_SceneDumper, sort_keys=False, default_flow_style=False, allow_unicode=True)


def _absolute_folder(base_dir: str | os.PathLike | None) -> Path | None:
    return None if base_dir is None else Path(os.path.abspath(base_dir))


def _validate(
    data: dict, source: SceneSource, overrides: Mapping[str, Any] | Sequence[str] | None
) -> SceneSpec:
    if is_urdf_scene(data):
        data, source = expand_urdf_scene(data, source)
    if overrides:
        data, overridden, origins = apply_override_items(data, overrides)
        source = replace(source, overrides=overridden, override_origins=origins)
    try:
        spec = SceneSpec.validate(data)
    except ValidationError as exc:
        errors = _one_union_branch(exc.errors(include_url=False), data)
        problems = [problem for error in errors for problem in _problems(error, data, source)]
        problems = _merged_branch_problems(problems)
        # overrides (no line) first, then in file order; stable within a line
        problems.sort(key=lambda p: (p.line is not None, p.line or 0))
        # once each: a wildcard override (contacts.*.friction) sets, and breaks, several fields alike
        problems = list({str(p): p for p in problems}.values())
        raise SceneError(problems) from None
    return spec.with_source(source)


# -------------------------------------------------------------------- YAML


class YamlProblem(Exception):
    """YAML that cannot be read, or that is beyond a limit.

    Attributes:
        line: 1-based line of the problem, or None.
        message: what is wrong, e.g. ``nested deeper than 64 levels (the limit)``.
    """

    def __init__(self, line: int | None, message: str):
        self.line = line
        self.message = message
        super().__init__(message if line is None else f"line {line}: {message}")


class _LimitExceeded(yaml.YAMLError):
    """Raised by the composer at the node that crosses a limit."""

    def __init__(self, mark: yaml.Mark | None, message: str):
        self.mark = mark
        self.message = message
        super().__init__(message)


class _LimitedLoader(yaml.SafeLoader):
    """SafeLoader whose composer enforces MAX_NESTING_DEPTH and MAX_EXPANDED_NODES.

    Composing keeps aliases as references to one node, so it costs the size of the
    text; the expanded size is counted as it goes (an alias adds the expanded size
    of its node, recorded when that node was composed), and so is the depth an
    alias reaches (its depth plus its node's height). Whatever crosses a limit is
    refused at once, before anything expands the tree. An alias to a collection
    still being composed (``a: &a [*a]``) would make the tree cyclic: refused too.
    """

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0  # collections open around the node being composed
        self._deepest = 0  # deepest expanded level reached so far
        self._expanded = 0  # nodes so far, aliases expanded
        self._open: set[str] = set()  # anchors of the collections being composed
        self._shape: dict[int, tuple[int, int]] = {}  # id(anchored node) -> (expanded nodes, height)

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self._open:
                raise _LimitExceeded(
                    event.start_mark,
                    f"recursive alias *{event.anchor}: it stands for a collection that contains it",
                )
            node = self.anchors.get(event.anchor)
            if node is not None:  # else the composer reports the undefined alias
                size, height = self._shape[id(node)]
                self._add(size, event.start_mark)
                self._reach(self._depth + height, event.start_mark)
            return super().compose_node(parent, index)
        collection = isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent))
        base, before, outer_deepest = self._depth, self._expanded, self._deepest
        self._deepest = base  # from here, the deepest level inside this node
        self._add(1, event.start_mark)
        if collection:
            self._depth += 1
            self._reach(self._depth, event.start_mark)
            if event.anchor is not None:
                self._open.add(event.anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            if collection:
                self._open.discard(event.anchor)
                self._depth -= 1
        if event.anchor is not None:
            # an alias of this node adds its expanded size, and its height to the alias's depth
            self._shape[id(node)] = (self._expanded - before, self._deepest - base)
        self._deepest = max(outer_deepest, self._deepest)
        return node

    def _add(self, nodes: int, mark: yaml.Mark) -> None:
        self._expanded += nodes
        if self._expanded > MAX_EXPANDED_NODES:
            raise _LimitExceeded(
                mark,
                f"more than {MAX_EXPANDED_NODES:,} nodes once aliases are expanded (the limit; "
                "an alias counts as the nodes it stands for)",
            )

    def _reach(self, depth: int, mark: yaml.Mark) -> None:
        self._deepest = max(self._deepest, depth)
        if depth > MAX_NESTING_DEPTH:
            raise _LimitExceeded(mark, f"nested deeper than {MAX_NESTING_DEPTH} levels (the limit)")

    def construct_object(self, node, deep=False):
        # a scalar with an explicit tag it does not fit (!!float abc, !!bool maybe,
        # !!timestamp 12) fails inside PyYAML with a plain ValueError, KeyError... that
        # names no line: made a YAML problem at the node
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError):
            tag = node.tag.rsplit(":", 1)[-1]
            if tag == "int" and isinstance(node.value, str) and len(node.value) > 4000:
                # Python refuses int() of more than 4,300 digits
                reason = f"an integer of {len(node.value):,} digits is too long"
            else:
                reason = f"{_shortened(node.value)} is not a valid !!{tag}"
            raise yaml.constructor.ConstructorError(None, None, reason, node.start_mark) from None


def _shortened(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else f"a {type(value).__name__}"
    return text if len(text) <= 40 else text[:37] + "..."


def read_yaml(text: str) -> tuple[yaml.Node | None, Any]:
    """The node tree and the plain data of one YAML document, within the limits.

    Raises:
        YamlProblem: malformed YAML, a character YAML does not allow, or a document
            beyond MAX_DOCUMENT_BYTES, MAX_NESTING_DEPTH or MAX_EXPANDED_NODES.
    """
    # characters are at least one byte each: only a long text needs encoding to measure
    if len(text) > MAX_DOCUMENT_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_DOCUMENT_BYTES:
        raise YamlProblem(None, _too_large(len(text.encode("utf-8", "surrogatepass"))))
    try:
        # the reader checks every character here, before any parsing
        loader = _LimitedLoader(text)
    except yaml.reader.ReaderError as exc:
        raise YamlProblem(_line_at(text, exc.position), _character_message(exc)) from None
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except _LimitExceeded as exc:
        raise YamlProblem(exc.mark.line + 1 if exc.mark is not None else None, exc.message) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        reason = exc.problem or exc.context or "unreadable"
        raise YamlProblem(line, f"invalid YAML: {reason}") from None
    except yaml.reader.ReaderError as exc:
        raise YamlProblem(_line_at(text, exc.position), _character_message(exc)) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(None, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    return node, data


def _line_at(text: str, position: int) -> int:
    """1-based line of a character index (YAML's line breaks are splitlines' up to there)."""
    return len((text[:position] + "x").splitlines())


def _character_message(exc: yaml.reader.ReaderError) -> str:
    character = exc.character
    code = character if isinstance(character, int) else ord(character)
    return f"character U+{code:04X} ({chr(code)!r}) is not allowed in YAML (control characters and NUL are not)"


def read_yaml_file(path: str | os.PathLike, file: str | None = None) -> tuple[Any, dict[str, int]]:
    """Plain data and {field path: line} of a YAML file other than a scene (a preset, a
    sweep file), read with a scene file's limits and checks.

    Raises:
        SceneError: unreadable, too large, not UTF-8, malformed YAML, YAML beyond the
            limits, or a key given twice; each problem names ``file`` (default: the path).
    """
    file = os.fspath(path) if file is None else file
    p = Path(path)
    if p.is_dir():
        raise SceneFileError(Problem(file, None, "", "cannot read the file: it is a directory"))
    if not p.exists():
        raise SceneFileError(Problem(file, None, "", "no such file"))
    return _parse_yaml(_read_scene_file(p, file), file)


def _parse_yaml(text: str, file: str) -> tuple[Any, dict[str, int]]:
    """Plain data and {field path: line} of a YAML document.

    Raises:
        SceneError: malformed YAML, YAML beyond the limits, or a key given twice in
            one mapping.
    """
    try:
        node, data = read_yaml(text)
    except YamlProblem as exc:
        raise SceneError(Problem(file, exc.line, "", exc.message)) from None
    lines: dict[str, int] = {}
    duplicates: list[Problem] = []
    if node is not None:
        _index_lines(node, "", lines, duplicates, file)
    if duplicates:
        raise SceneError(duplicates)
    return data, lines


def _index_lines(node: yaml.Node, path: str, lines: dict[str, int], duplicates: list[Problem], file: str) -> None:
    """Record the line of ``node`` at ``path`` and of everything below it."""
    lines.setdefault(path, node.start_mark.line + 1)
    prefix = path + "." if path else ""
    if isinstance(node, yaml.MappingNode):
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            # merge keys (<<) and non-scalar keys name no field
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = str(key_node.value)
            key_line = key_node.start_mark.line + 1
            if key in first_line:
                message = f"duplicate key {key!r} (first given on line {first_line[key]})"
                duplicates.append(Problem(file, key_line, prefix + key, message))
                continue
            first_line[key] = key_line
            lines[prefix + key] = key_line
            _index_lines(value_node, prefix + key, lines, duplicates, file)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _index_lines(item, prefix + str(index), lines, duplicates, file)


# ------------------------------------------------- pydantic-core -> problems


# pydantic-core's labels of a union's branches in an error's location ("literal['body']",
# "tagged-union[BoxShapeSpec,...]"): its internals, never a field a user wrote.
_BRANCH_LABEL = re.compile(r"^(literal|tagged-union|union|nullable|function-[a-z]+)\[")


def _is_branch_label(element: Any) -> bool:
    return isinstance(element, str) and bool(_BRANCH_LABEL.match(element))


def _one_union_branch(errors: list[ErrorDetails], data: Any) -> list[ErrorDetails]:
    """A union's errors from the branch the value went into, when one did.

    pydantic-core reports every branch of a union that failed: a contact's ``shape: {type:
    box}`` is both "must be 'body'" (the literal branch) and "size: field required" (the shape
    branch). A branch whose errors lie deeper than the union's field, or that read the
    value's ``type`` tag, took the value (it was a mapping): only its errors are the user's.
    When none did, every branch's is kept (merged into one message by
    ``_merged_branch_problems``).
    """
    def branch_of(error) -> tuple[tuple, Any, bool] | None:
        loc = tuple(error["loc"])
        for i, element in enumerate(loc):
            if _is_branch_label(element):
                entered = len(loc) > i + 1 or error["type"] in ("union_tag_invalid", "union_tag_not_found")
                return loc[:i], element, entered
        return None

    taken: dict[tuple, Any] = {}  # union's location -> the branch the value went into
    for error in errors:
        found = branch_of(error)
        if found is not None and found[2]:
            taken.setdefault(found[0], found[1])
    kept = []
    for error in errors:
        found = branch_of(error)
        if found is not None and found[0] in taken and found[1] != taken[found[0]]:
            continue  # a branch the value did not go into, beside one it did
        kept.append(error)
    return kept


def _merged_branch_problems(problems: list[Problem]) -> list[Problem]:
    """Problems of one field from several union branches, as one: "must be 'body', got 'box'"
    and "must be a mapping, got 'box'" are "must be 'body' or a mapping, got 'box'"."""
    merged: dict[tuple, Problem] = {}
    for problem in problems:
        key = (problem.file, problem.line, problem.field)
        first = merged.get(key)
        if first is None:
            merged[key] = problem
            continue
        if problem.message == first.message:
            continue  # the same, twice (a wildcard override sets several fields alike)
        a, b = (re.match(r"^must be (.*), got (.*)$", p.message) for p in (first, problem))
        if a and b and a.group(2) == b.group(2):
            if b.group(1) not in a.group(1).split(" or "):
                merged[key] = replace(first, message=f"must be {a.group(1)} or {b.group(1)}, got {a.group(2)}")
        else:
            merged[(*key, problem.message)] = problem
    return list(merged.values())


def _problems(error: ErrorDetails, data: Any, source: SceneSource) -> list[Problem]:
    """One Problem per issue in a pydantic-core error (several for SpecProblems)."""
    path = _field_path(error["loc"], data)
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, SpecProblems):
        return [source.problem(_join(path, sub), message) for sub, message in cause.problems]
    suffix, message = _message(error, data, path)
    return [source.problem(_join(path, suffix), message)]


def _join(path: str, sub: str) -> str:
    return f"{path}.{sub}" if path and sub else path or sub


def _field_path(loc: tuple[int | str, ...], data: Any) -> str:
    """Dotted field path of a pydantic-core error location.

    Walks the data along the location so that union tags are dropped only
    where they are not real keys (a joint may well be called "box").
    """
    parts: list[str] = []
    node = data
    for element in loc:
        if isinstance(node, dict) and element in node:
            node = node[element]
        elif isinstance(node, list) and isinstance(element, int) and 0 <= element < len(node):
            node = node[element]
        elif element in UNION_TAGS or element == _KEY_LOCATION or _is_branch_label(element):
            continue
        else:
            node = None
        parts.append(str(element))
    return ".".join(parts)


def _message(error: ErrorDetails, data: Any, path: str) -> tuple[str, str]:
    """(path suffix, short message) of one pydantic-core error."""
    kind = error["type"]
    ctx = error.get("ctx", {})
    got = value_text(error.get("input"))
    if kind == "missing":
        return "", "field required"
    if kind == "extra_forbidden":
        key = str(error["loc"][-1])
        return "", f"unknown field {key!r}" + _suggestion(key, _container(data, path))
    if kind in ("float_type", "float_parsing"):
        return "", f"must be a number, got {got}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return "", f"must be an integer, got {got}"
    if kind == "finite_number":
        return "", f"must be a finite number, got {got}"
    if kind == "string_type":
        return "", f"must be a string, got {got}"
    if kind == "list_type":
        return "", f"must be a list, got {got}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return "", f"must be a mapping, got {got}"
    if kind == "literal_error":
        return "", f"must be {ctx['expected']}, got {got}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = {"greater_than": "gt", "greater_than_equal": "ge", "less_than": "lt", "less_than_equal": "le"}[kind]
        symbol = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}[bound]
        return "", f"must be {symbol} {ctx[bound]:g}, got {got}"
    if kind == "too_short":
        entries = "entry" if ctx["min_length"] == 1 else "entries"
        return "", f"must have at least {ctx['min_length']} {entries}, got {ctx['actual_length']}"
    if kind == "union_tag_invalid":
        named = [str(e) for e in error["loc"] if isinstance(e, str) and not _is_branch_label(e)]
        what = named[-1] if named else "the"
        choices = str(ctx["expected_tags"]).replace("'", "")
        return _discriminator(ctx), f"unknown {what} type {ctx['tag']!r} (one of: {choices})"
    if kind == "union_tag_not_found":
        return _discriminator(ctx), "field required"
    text = error["msg"].removeprefix("Value error, ")
    return "", text[:1].lower() + text[1:]


def _discriminator(ctx: dict) -> str:
    """The discriminating key of a tagged union ("type")."""
    return str(ctx.get("discriminator", "")).strip("'")


def _container(data: Any, path: str) -> Any:
    """The data at the parent of a field path (the mapping holding the field)."""
    node = data
    for part in path.split(".")[:-1]:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _suggestion(key: str, mapping: Any) -> str:
    """' (did you mean 'mass'?)' for a mistyped key, judged by the mapping's other keys.

    The candidate fields are those of the scene models that share the most keys
    with the mapping, so a body's typo is matched against body fields. A field the
    mapping already has is a candidate too: an override (``--set``, a sweep's axis)
    mistyping ``bodies.0.mas`` adds ``mas`` beside the ``mass`` it meant.
    """
    others = set(mapping) - {key} if isinstance(mapping, dict) else set()
    best = max(len(others & set(model.fields)) for model in SPEC_MODELS)
    candidates = {
        name
        for model in SPEC_MODELS
        if len(others & set(model.fields)) == best
        for name in model.fields
        if name != key
    }
    close = difflib.get_close_matches(key, sorted(candidates), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
