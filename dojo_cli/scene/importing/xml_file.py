"""An importer's XML file: its bytes parsed by lxml with line numbers, problems at ``file:line``.

A file that cannot be read is an I/O problem (``SceneFileError``, exit 3); malformed XML is
refused with its line (``SceneError``), never recovered from silently, except, where the
importer asks for it (the URDF reader), the two slips ROS tools and Pinocchio read without
a word (``LENIENT_XML``): the importer warns, listing them. Entities are never expanded (no
entity bombs) and comments are dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

from dojo_cli.errors import Problem, SceneError, SceneFileError

# Leniencies of the XML read (one warning lists those used): an XML declaration that is
# not at the very start of the file or not of version 1.0 (TinyXML, which urdfdom and
# Pinocchio use, ignores it) is dropped; content after the root element is cut off.
LENIENT_XML = ("declaration", "trailing")
_DECLARATION = re.compile(rb"<\?xml(?:\s[^?]*)?\?>")


def read_xml(path: Path, shown: str, what: str, lenient: bool = False) -> tuple:
    """(root element, repairs) of an XML file; repairs are (line, what was read leniently),
    empty unless ``lenient``.

    Args:
        path: the file.
        shown: its name in problems.
        what: the file's kind in the message of a file that cannot be read ("the URDF").
        lenient: repair what ``LENIENT_XML`` lists (each at most once).

    Raises:
        SceneFileError: the file cannot be read.
        SceneError: malformed XML, at its line.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        # a file that is missing or unreadable: I/O (exit 3)
        raise SceneFileError(Problem(shown, None, "", f"cannot read {what}: {exc.strerror or exc}")) from None
    from lxml import etree  # here: only the scenes that import a file pay for importing it

    repaired = []  # (line, what was read leniently)
    while True:
        try:
            root = etree.fromstring(data, etree.XMLParser(remove_comments=True, resolve_entities=False))
            break
        except etree.XMLSyntaxError as exc:
            line = exc.lineno if exc.lineno else None
            fixed = _lenient_xml(data, exc) if lenient and len(repaired) < len(LENIENT_XML) else None
            if fixed is None or any(done == fixed[1] for _, done in repaired):
                raise SceneError(Problem(shown, line, "", f"malformed XML: {exc.msg}")) from None
            data = fixed[0]
            repaired.append((line, fixed[1]))
    return root, repaired


def _lenient_xml(data: bytes, exc) -> tuple[bytes, str] | None:
    """(the document with what lxml refused repaired, what it was), or None: not one of the
    LENIENT_XML cases (a real error, reported as malformed XML)."""
    message = exc.msg or ""
    if message.startswith(("Unsupported version", "XML declaration allowed only at the start")):
        # every declaration goes (line breaks kept: the lines of the rest do not move)
        stripped = _DECLARATION.sub(lambda m: b"\n" * m.group(0).count(b"\n"), data)
        return (stripped, "an XML declaration not at the start or not of version 1.0, ignored") if stripped != data else None
    if message.startswith("Extra content at the end of the document") and exc.lineno:
        lines = data.split(b"\n")
        if exc.lineno > len(lines):
            return None
        cut = sum(len(line) + 1 for line in lines[: exc.lineno - 1]) + max(exc.position[1] - 1, 0)
        return data[:cut], "content after the root element, ignored"
    return None
