"""Hypothesis strategies of hostile inputs: scene files, --set values, storage damage, URDFs.

Every strategy builds data (text, bytes, lists of operations); nothing here runs `dojo`.
The test modules turn the data into files and command lines.
"""

from __future__ import annotations

import copy
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
SCENES = REPO / "scenes"  # the scene library, one subfolder per group
URDF_DIR = REPO / "tests" / "data" / "urdf"
PACKAGES = URDF_DIR / "packages"


def weighted(*choices: tuple[int, st.SearchStrategy]) -> st.SearchStrategy:
    """One of the strategies with these weights. (st.one_of flattens nested one_ofs, so a
    branch's share there is its number of leaf strategies, not what the code suggests.)"""
    index = [i for i, (w, _) in enumerate(choices) for _ in range(w)]
    return st.sampled_from(index).flatmap(lambda i: choices[i][1])


# ------------------------------------------------------------------ built-in scenes
@cache
def builtin_text(name: str) -> str:
    [path] = SCENES.glob(f"*/{name}.yaml")
    return path.read_text(encoding="utf-8")


@cache
def builtin_names() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in SCENES.glob("*/*.yaml")))


@cache
def urdf_backed() -> frozenset[str]:
    """The built-ins read from a robot's URDF (slower, and a different loader path)."""
    return frozenset(n for n in builtin_names() if "\nurdf:" in "\n" + builtin_text(n))


def scene_choice() -> st.SearchStrategy[str]:
    """A built-in, the hand-written ones four times as often as the URDF-backed ones."""
    light = [n for n in builtin_names() if n not in urdf_backed()]
    return st.sampled_from(light * 4 + sorted(urdf_backed()))


# Small, fast scenes for the commands that run steps (simulate, step, gradients).
STEPPABLE = ("pendulum", "box", "slider", "sphere", "cartpole", "double_pendulum", "incline", "sliding_box",
             "pendulum_limit", "box2d", "ball_on_ball", "fourbar", "tippetop", "hopper", "dzhanibekov")


def walk(node, path=()):
    """(path, node) of every node of a YAML tree, the root included."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, path + (i,))


def get(tree, path):
    for p in path:
        tree = tree[p]
    return tree


def set_at(tree, path, value):
    if not path:
        return value
    get(tree, path[:-1])[path[-1]] = value
    return tree


# ------------------------------------------------------------------ hostile values
HUGE_INTS = [2**31, 2**63 - 1, 2**63, 2**64, 10**19, 10**30, 10**300, -(2**63) - 1]
EXTREME_FLOATS = [0.0, -0.0, -1.0, 1e-300, -1e-300, 5e-324, 1e300, -1e300, 1.7976931348623157e308, 1e-8, 1e8,
                  1e12, -1e12, math.nan, math.inf, -math.inf, 2.0**-1074, 1e154, 1e155, 3.0]


def extreme_number() -> st.SearchStrategy:
    return weighted(
        (3, st.sampled_from(EXTREME_FLOATS)),
        (1, st.sampled_from(HUGE_INTS)),
        (1, st.integers(min_value=-10, max_value=10)),
        (2, st.floats(allow_nan=True, allow_infinity=True)),
    )


HOSTILE_NAMES = [
    "", " ", "  leading", "trailing ", "origin", "ground", "ünïcödé", "名前", "😀", "\u202eevil", "\u200b",
    "\x00", "a\x00b", "a\nb", "a\r\nb", "\t", "\x1b[31mred\x1b[0m", "\x7f", "\x85", "\u2028", "\ufeff",
    "a.b", "0", "-1", "*", "a=b", "../../etc/passwd", "/abs", "a b", "${HOME}", "%s%n", "{x}", "null", "true",
    "1e300", "nan", "'", '"', "\\", "&a", "*a", "#comment", "- x", "key: value", "[1]",
]


def hostile_name() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(HOSTILE_NAMES),
        st.text(min_size=0, max_size=12),
        st.integers(min_value=200, max_value=20000).map(lambda n: "n" * n),
        st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\ud800"), min_size=1, max_size=6),
    )


def type_confusion() -> st.SearchStrategy:
    return st.one_of(
        st.sampled_from(["heavy", "", "1.0", "1,0", "nan", "yes", "[1, 2, 3]", "0x10", "1e", "--", "~"]),
        st.none(),
        st.booleans(),
        st.just([]),
        st.just({}),
        st.lists(st.floats(allow_nan=False, width=32) | st.integers(-3, 3), max_size=5),
        st.dictionaries(st.sampled_from(["a", "type", "name", "value", "0", "size"]), st.integers(-2, 2), max_size=3),
        st.just([[1.0, 2.0], [3.0]]),
        st.just([None]),
        st.just(["a", "b", "c"]),
    )


def hostile_value() -> st.SearchStrategy:
    return weighted((1, extreme_number()), (1, type_confusion()), (1, hostile_name()),
                    (1, st.lists(extreme_number(), min_size=0, max_size=6)))


# Raw YAML fragments (placed as the text of one value; they cannot be written by safe_dump).
def billion_laughs(levels: int, fanout: int = 9) -> str:
    parts = [f"&l0 [{', '.join(['1.0'] * fanout)}]"]
    for i in range(1, levels):
        parts.append(f"&l{i} [{', '.join([f'*l{i - 1}'] * fanout)}]")
    return "[" + ", ".join(parts) + f", *l{levels - 1}]"


def raw_fragment() -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(1, 1200).map(lambda d: "[" * d + "1.0" + "]" * d),
        st.integers(1, 800).map(lambda d: "{a: " * d + "1" + "}" * d),
        st.sampled_from([
            "&r [*r]", "&r {a: *r}", "[&a 1.0, *a, *a]", "*undefined", "&a 1.0", "{<<: [&m {mass: 2.0}], name: x}",
            "{<<: *nothere}", "!!python/object/apply:os.system ['echo pwned']", "!!python/name:os.system",
            "!!binary aGVsbG8=", "!!timestamp 2001-12-14t21:59:43.10-05:00", "!!set {a, b}", "!!omap [a: 1, b: 2]",
            "!custom 1.0", "!!float abc", "!!int 1.5", "!!str 1.0", "!<tag:yaml.org,2002:int> 3", "!!null ''",
            "1e999", "-1e999", ".NaN", "+.inf", "-.Inf", "0x7fffffffffffffffffff", "0o777", "0b101", "1_000.5", "1e-400",
            "0.0e0", "-.0", "=", "? complex key", "[1, 2", "{a: 1", "'unterminated", '"\\x00"', '"\\uD800"',
            '"\\U0001F600"', "|", ">", "---", "...", "%YAML 1.1", "@reserved", "`reserved",
        ]),
        st.integers(2, 7).map(billion_laughs),
        st.integers(300, 6000).map(lambda n: "9" * n),
    )


# ------------------------------------------------------------------ scene mutations
@dataclass
class SceneCase:
    base: str
    text: bytes
    ops: list = field(default_factory=list)
    filename: str = "scene.yaml"

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        return f"SceneCase(base={self.base!r}, ops={self.ops!r}, {len(self.text)} bytes)"


TREE_OPS = ("perturb", "type", "extreme", "scale", "length", "name", "rename_key", "delete", "unknown", "duplicate", "swap",
            "nest", "raw", "copy")
# Weighted: most mutations keep a scene that parses and types well (extreme numbers, names,
# lengths), so that the numbers reach the physics; the rest attack types and structure.
TREE_OP_CHOICE = (("perturb",) * 6 + ("extreme",) * 8 + ("scale",) * 5 + ("name",) * 4 + ("length",) * 3 + ("type",) * 2
                  + ("duplicate",) * 2 + ("raw",) * 2 + ("nest", "delete", "unknown", "swap", "copy", "rename_key"))
TEXT_OPS = ("dup_key", "truncate", "insert_bytes", "nul", "control", "invalid_utf8", "bom", "utf16", "crlf",
            "tabs", "long_line", "empty", "multi_doc", "scalar_doc", "anchors_top")
NAME_KEYS = ("name", "parent", "child", "body")


def _placeholder(i: int) -> str:
    return f"zzfuzzraw{i}zz"


@st.composite
def scene_cases(draw, allow_text_damage: bool = True) -> SceneCase:
    base = draw(scene_choice())
    tree = yaml.safe_load(builtin_text(base))
    raws: list[str] = []
    ops = []
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 2, 3]))):
        paths = [p for p, _ in walk(tree)]
        op = draw(st.sampled_from(TREE_OP_CHOICE))
        path = draw(st.sampled_from(paths))
        desc = [op, ".".join(map(str, path))]
        if op == "type":
            tree = set_at(tree, path, draw(type_confusion()))
        elif op == "extreme":
            numeric = [p for p, v in walk(tree) if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if numeric:
                path = draw(st.sampled_from(numeric))
                desc[1] = ".".join(map(str, path))
            tree = set_at(tree, path, draw(extreme_number()))
        elif op == "scale":
            numeric = [p for p, v in walk(tree) if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if numeric:
                path = draw(st.sampled_from(numeric))
                desc[1] = ".".join(map(str, path))
                factor = draw(st.sampled_from([0.0, -1.0, 1e-300, 1e300, 1e10, 1e-10, 1e150, -1e150, 1e-155]))
                tree = set_at(tree, path, get(tree, path) * factor)
        elif op == "perturb":
            numeric = [p for p, v in walk(tree) if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if numeric:
                path = draw(st.sampled_from(numeric))
                desc[1] = ".".join(map(str, path))
                factor = draw(st.sampled_from([1e-3, 0.1, 0.5, 2.0, 10.0, 100.0, 1e3, 1e4, 1e6, 1e9]))
                value = get(tree, path)
                tree = set_at(tree, path, (value * factor) if value else factor)
                desc.append(factor)
        elif op == "length":
            lists = [p for p, v in walk(tree) if isinstance(v, list)]
            if lists:
                path = draw(st.sampled_from(lists))
                desc[1] = ".".join(map(str, path))
                lst = get(tree, path)
                how = draw(st.sampled_from(["empty", "short", "long", "huge", "one"]))
                desc.append(how)
                if how == "empty":
                    new = []
                elif how == "short":
                    new = lst[: max(0, len(lst) - draw(st.integers(1, 3)))]
                elif how == "one":
                    new = lst[:1]
                elif how == "long":
                    extra = draw(st.lists(extreme_number() | st.just(copy.deepcopy(lst[0]) if lst else 0.0),
                                          min_size=1, max_size=4))
                    new = lst + extra
                else:
                    new = (lst or [0.0]) * draw(st.integers(20, 400))
                tree = set_at(tree, path, copy.deepcopy(new))
        elif op == "name":
            named = [p for p, v in walk(tree) if p and p[-1] in NAME_KEYS]
            if named:
                path = draw(st.sampled_from(named))
                desc[1] = ".".join(map(str, path))
                others = [v for p, v in walk(tree) if p and p[-1] == "name" and isinstance(v, str)]
                value = draw(hostile_name() | (st.sampled_from(others) if others else hostile_name()))
                tree = set_at(tree, path, value)
        elif op == "rename_key":
            dicts = [p for p, v in walk(tree) if isinstance(v, dict) and v]
            if not dicts:
                continue
            path = draw(st.sampled_from(dicts))
            d = get(tree, path) if path else tree
            key = draw(st.sampled_from(sorted(d, key=str)))
            new_key = draw(hostile_name() | st.sampled_from(["bodies", "joints", "mass", "Mass", "name ", "type"]))
            desc = [op, ".".join(map(str, path + (key,))), new_key]
            items = [(new_key if k == key else k, v) for k, v in d.items()]
            d.clear()
            d.update(items)
        elif op == "delete":
            if path:
                parent = get(tree, path[:-1])
                del parent[path[-1]]
        elif op == "unknown":
            dicts = [p for p, v in walk(tree) if isinstance(v, dict)]
            if not dicts:
                continue
            path = draw(st.sampled_from(dicts))
            desc[1] = ".".join(map(str, path))
            key = draw(st.sampled_from(["masss", "extra", "x", "type2", "bodies", "__class__", "<<", "format"])
                       | hostile_name())
            (get(tree, path) if path else tree)[key] = draw(hostile_value())
        elif op == "duplicate":
            lists = [p for p, v in walk(tree) if isinstance(v, list) and v]
            if lists:
                path = draw(st.sampled_from(lists))
                desc[1] = ".".join(map(str, path))
                lst = get(tree, path)
                lst.append(copy.deepcopy(lst[draw(st.integers(0, len(lst) - 1))]))
        elif op == "swap":
            other = draw(st.sampled_from(paths))
            desc.append(".".join(map(str, other)))
            if path and other and path[: len(other)] != other and other[: len(path)] != path:
                a, b = copy.deepcopy(get(tree, path)), copy.deepcopy(get(tree, other))
                tree = set_at(tree, path, b)
                tree = set_at(tree, other, a)
        elif op in ("nest", "raw"):
            frag = draw(st.integers(1, 1200).map(lambda d: "[" * d + "1.0" + "]" * d)) if op == "nest" else draw(raw_fragment())
            desc.append(frag if len(frag) < 60 else frag[:30] + f"...({len(frag)} chars)")
            raws.append(frag)
            tree = set_at(tree, path, _placeholder(len(raws) - 1))
        elif op == "copy":
            other = draw(st.sampled_from(paths))
            desc.append(".".join(map(str, other)))
            tree = set_at(tree, path, copy.deepcopy(get(tree, other)))
        ops.append(tuple(desc))
    try:
        text = yaml.safe_dump(tree, sort_keys=False, allow_unicode=draw(st.booleans()), width=100000,
                              default_flow_style=draw(st.sampled_from([False, None])))
    except (yaml.YAMLError, ValueError, RecursionError) as exc:  # an unrepresentable value: write it by hand
        text = f"# {type(exc).__name__}\n" + repr(tree)
    for i, frag in enumerate(raws):
        text = text.replace(_placeholder(i), frag)
    data = text.encode("utf-8", errors="surrogatepass")
    if allow_text_damage and draw(st.integers(0, 3)) == 0:
        op, data = draw(text_damage(data))
        ops.append(op)
    return SceneCase(base, data, ops, draw(st.sampled_from(["scene.yaml"] * 6 + ["s c e n e.yaml", "ünï.yaml",
                                                                                 "scene.yml", "scene", "SCENE.YAML"])))


@st.composite
def text_damage(draw, data: bytes):
    """One raw damage of a YAML text: (description, bytes)."""
    op = draw(st.sampled_from(TEXT_OPS))
    n = len(data)
    at = draw(st.integers(0, n))
    if op == "dup_key":
        key = draw(st.sampled_from(["name", "timestep", "bodies", "joints", "gravity", "duration", "steps", "solver"]))
        value = draw(st.sampled_from(["x", "0.02", "[]", "{}", "[0, 0, -9.81]", "7", "{max_iter: 3}"]))
        return ("dup_key", key, value), data + f"\n{key}: {value}\n".encode()
    if op == "truncate":
        return ("truncate", at), data[:at]
    if op == "insert_bytes":
        junk = draw(st.binary(min_size=1, max_size=16))
        return ("insert_bytes", at, junk), data[:at] + junk + data[at:]
    if op == "nul":
        return ("nul", at), data[:at] + b"\x00" + data[at:]
    if op == "control":
        ch = draw(st.sampled_from(["\x01", "\x07", "\x08", "\x0b", "\x0c", "\x1b", "\x7f", "\x85", "\u2028",
                                   "\u2029", "\ufffe", "\x9f", "\r"]))
        return ("control", at, ch), data[:at] + ch.encode("utf-8", errors="surrogatepass") + data[at:]
    if op == "invalid_utf8":
        bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80"]))
        return ("invalid_utf8", at, bad), data[:at] + bad + data[at:]
    if op == "bom":
        bom = draw(st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf\xef\xbb\xbf"]))
        return ("bom", bom), bom + data
    if op == "utf16":
        enc = draw(st.sampled_from(["utf-16", "utf-16-le", "utf-32"]))
        return ("utf16", enc), data.decode("utf-8", errors="replace").encode(enc)
    if op == "crlf":
        return ("crlf",), data.replace(b"\n", b"\r\n")
    if op == "tabs":
        return ("tabs",), data.replace(b"\n  ", b"\n\t")
    if op == "long_line":
        k = draw(st.integers(10_000, 2_000_000))
        return ("long_line", k), data + b"\n# " + b"x" * k + b"\n"
    if op == "empty":
        return ("empty",), draw(st.sampled_from([b"", b"\n", b"   \n", b"---\n", b"~\n", b"#only a comment\n"]))
    if op == "multi_doc":
        return ("multi_doc",), data + b"\n---\n" + data
    if op == "scalar_doc":
        return ("scalar_doc",), draw(st.sampled_from([b"42\n", b"[1, 2]\n", b"pendulum\n", b"'text'\n", b"null\n"]))
    # anchors_top: an alias bomb under an unknown key, before everything else
    levels = draw(st.integers(2, 7))
    return ("anchors_top", levels), f"lol: {billion_laughs(levels)}\n".encode() + data


# ------------------------------------------------------------------ --set
OPTIONAL_FIELDS = [
    "timestep", "duration", "steps", "seed", "gravity", "format", "name", "integrator", "initial_velocity",
    "solver.rtol", "solver.btol", "solver.max_iter", "solver.max_ls", "solver.ls_scale", "solver.undercut",
    "solver.no_progress_max", "solver.no_progress_undercut", "bodies.0.mass", "bodies.0.inertia",
    "bodies.0.shape.type", "bodies.0.shape.size", "bodies.0.shape.radius", "bodies.0.shape.height",
    "bodies.0.shape.color", "bodies.0.shape.position_offset", "bodies.0.initial.position",
    "bodies.0.initial.orientation", "bodies.0.initial.velocity", "bodies.0.initial.angular_velocity",
    "bodies.0.name", "joints.0.type", "joints.0.axis", "joints.0.parent", "joints.0.child", "joints.0.spring",
    "joints.0.damper", "joints.0.spring_offset", "joints.0.limits", "joints.0.limits.lower", "joints.0.limits.upper",
    "joints.0.initial.position", "joints.0.initial.velocity", "joints.0.orientation_offset", "joints.0.parent_vertex",
    "joints.0.child_vertex", "contacts.0.friction", "contacts.0.radius", "contacts.0.offset", "contacts.0.model",
    "contacts.0.restitution", "contacts.0.against", "contacts.0.against.normal", "collisions.mode",
    "collisions.friction", "collisions.exclude", "controller", "controller.type", "controller.inputs",
    "controller.kp", "controller.kd", "controller.targets", "bodies", "joints", "contacts", "bodies.0", "joints.0",
]
WRONG_PATHS = [
    "", ".", "..", "bodies..mass", "bodies.0.", ".bodies", "bodies.99.mass", "bodies.-1.mass", "bodies.x.mass",
    "bodies.0.mass.x", "joints.0.axis.0", "joints.0.axis.7", "gravity.3", "gravity.-4", "masss", "Bodies.0.mass",
    "joints.*.spring", "bodies.__class__", "__init__", "0", "bodies.0.mass.0.0", "bodies.1e3.mass",
    "bodies.0x1.mass", "bodies.00.mass", "bodies. 0.mass", "joints.origin.spring", "solver.unknown",
    "a" * 5000, ".".join(["bodies"] * 300), "bodies.0.name\n", "ünï.cödé", "bodies\t0.mass",
]


@cache
def field_values(name: str) -> dict[str, object]:
    """Dotted path -> value of every field of a built-in, by index and (list items with a
    name) by name: joints.0.spring and joints.hinge.spring."""
    tree = yaml.safe_load(builtin_text(name))
    out = {}
    for path, node in walk(tree):
        if not path:
            continue
        out[".".join(map(str, path))] = node
        for i, p in enumerate(path):
            if isinstance(p, int):
                item = get(tree, path[: i + 1])
                if isinstance(item, dict) and isinstance(item.get("name"), str):
                    alt = list(map(str, path))
                    alt[i] = item["name"]
                    out.setdefault(".".join(alt), node)
    return out


def field_paths(name: str) -> tuple[str, ...]:
    return tuple(field_values(name))


def _num(x) -> str:
    return repr(float(x)) if isinstance(x, float) else str(x)


def plausible_value(node) -> st.SearchStrategy[str]:
    """A value of the field's own type and shape, with a number pushed around or to an extreme."""
    factor = st.sampled_from([0.5, 2.0, 10.0, 1e3, 1e6, 1e8, 1e12, 1e-3, 1e-8, 1e-12, 1e50, 1e-50, 0.0, -1.0,
                              1e-300, 1e100, 1e150, 1e200, 1e300])
    if isinstance(node, bool):
        return st.sampled_from(["true", "false", "2"])
    if isinstance(node, (int, float)):
        return weighted((3, factor.map(lambda f: _num(node * f if node else f))), (1, extreme_number().map(_num)))
    if isinstance(node, list) and node and all(isinstance(v, (int, float)) for v in node):
        def replaced(t):
            j, f, x = t
            new = list(node)
            new[j] = x if x is not None else (node[j] * f if node[j] else f)
            return "[" + ", ".join(_num(v) for v in new) + "]"

        return st.tuples(st.integers(0, len(node) - 1), factor, weighted((3, st.none()), (1, extreme_number()))).map(
            replaced)
    if isinstance(node, str):
        return hostile_name().map(lambda s: yaml.safe_dump(s, default_flow_style=True).strip().removesuffix("...").strip())
    return st.just(yaml.safe_dump(node, default_flow_style=True, width=100000).strip())


def number_text() -> st.SearchStrategy[str]:
    return st.one_of(
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.sampled_from(["0", "-0", "-0.0", "1e-300", "1e300", "-1e300", "5e-324", "1.7976931348623157e308",
                         "1e309", "nan", "NaN", ".nan", "inf", "-inf", ".inf", "-.inf", "+.inf", "Infinity",
                         "0x10", "0o17", "1_000", "1e", ".5", "5.", "+1", "--1", "1.0.0", "1,5", "١٢", "½",
                         "9" * 400, "9" * 5000, "-" + "9" * 30, "2**64", "1e1000000000"]),
        st.integers(min_value=-(2**70), max_value=2**70).map(str),
    )


def yaml_fragment_text() -> st.SearchStrategy[str]:
    return st.one_of(
        raw_fragment(),
        st.sampled_from(["[1, 2", "{a: 1}", "[1, 2, 3]", "[]", "{}", "~", "null", "yes", "no", "on", "- 1",
                         "a: b: c", "[nan, 0, 0]", "[1e300, 1e300, 1e300]", "[0, 1e200, 0]", "[0, 0, 0]",
                         "[.inf, 0, 0]", "[[1, 0, 0], [0, 1, 0], [0, 0, -1]]", "{lower: [1], upper: [-1]}",
                         "{type: box}", "{type: sphere, radius: -1}", "{body: nobody}", "{normal: [0, 0, 0]}",
                         "[" + ",".join(["1"] * 1000) + "]", "'quoted'", '"dq\\n"', "|", "&a 1", "*a"]),
        st.lists(number_text(), min_size=0, max_size=7).map(lambda xs: "[" + ", ".join(xs) + "]"),
    )


def control_string() -> st.SearchStrategy[str]:
    """Strings a user can put in argv: anything but NUL (execve cannot pass it)."""
    return st.one_of(
        st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=20),
        st.sampled_from(["a\nb", "\x1b[2J", "\r", "\t", "\x7f", "\u202e", "\ufeff", "x" * 100_000, "\udcff\udcfe"]),
    )


@dataclass
class SetCase:
    scene: str
    sets: list[str]
    command: str
    extra: list[str] = field(default_factory=list)


@st.composite
def set_cases(draw) -> SetCase:
    scene = draw(st.sampled_from(STEPPABLE * 3 + tuple(sorted(urdf_backed()))))
    fields = field_values(scene)
    real = tuple(fields)
    sets = []
    for _ in range(draw(st.sampled_from([1] * 6 + [2, 3]))):
        kind = draw(st.sampled_from(["real"] * 8 + ["optional"] * 2 + ["wrong", "control"]))
        if kind == "real":
            path = draw(st.sampled_from(real))
            value = draw(weighted((6, plausible_value(fields[path])), (1, number_text()), (1, yaml_fragment_text()),
                                  (1, control_string())))
        else:
            path = draw(st.sampled_from(OPTIONAL_FIELDS) if kind == "optional" else st.sampled_from(WRONG_PATHS)
                        if kind == "wrong" else control_string().filter(lambda s: "=" not in s))
            value = draw(weighted((2, number_text()), (1, yaml_fragment_text()), (1, control_string()),
                                  (1, hostile_name())))
        value = value.replace("\x00", "")
        form = draw(st.sampled_from(["ok"] * 30 + ["no_eq", "lead_eq", "empty_value", "double_eq", "spaces"]))
        if form == "ok":
            arg = f"{path}={value}"
        elif form == "no_eq":
            arg = path or value
        elif form == "lead_eq":
            arg = f"={value}"
        elif form == "empty_value":
            arg = f"{path}="
        elif form == "double_eq":
            arg = f"{path}=={value}"
        else:
            arg = f" {path} = {value} "
        sets.append(arg)
    command = draw(st.sampled_from(["simulate"] * 6 + ["check"] * 2 + ["step", "gradients"]))
    extra = []
    if command == "simulate" and draw(st.integers(0, 7)) == 0:
        extra = draw(st.sampled_from([["--duration", "1e-300"], ["--duration", "nan"], ["--duration", "-1"],
                                      ["--duration", "1e300"], ["--steps", "0"], ["--steps", "-3"],
                                      ["--steps", "99999999999999999999"], ["--abort-on-failure"], ["--gradients"],
                                      ["--gradients-wrt", "bogus"], ["--gradients-wrt", "state"]]))
    return SetCase(scene, sets, command, extra)


# ------------------------------------------------------------------ storage damage
@dataclass(frozen=True)
class Layout:
    """What a base storage file holds: dataset paths, (object, attribute) pairs, size."""

    datasets: tuple[str, ...]
    groups: tuple[str, ...]
    attrs: tuple[tuple[str, str], ...]
    size: int


DATASET_DAMAGE = ("nan", "inf", "huge", "negative", "zero", "short", "long", "empty", "scalar", "flatten",
                  "extra_axis", "transpose", "int", "bytes", "vlen_str", "bool", "complex", "compound", "float16",
                  "group", "softlink", "extlink", "huge_shape", "delete")
ATTR_NAMES_EXTRA = ("names", "status", "format", "format_version", "scene", "steps_completed", "timestep",
                    "gravity", "solver_options", "failed_steps", "scene_name", "integrator")
STATUSES = ["complete", "running", "interrupted", "failed", "complete_with_failures", "", "COMPLETE", "bogus",
            "complete\x00", "ünï"]


def attr_value(name: str):
    """A hostile value for attribute ``name`` (tuples tag values the applier converts)."""
    generic = st.one_of(
        st.sampled_from([("int", -1), ("int", 0), ("int", 2**62), ("float", math.nan), ("float", math.inf),
                         ("float", -1.0), ("float", 0.0), ("float", 1e308), ("str", ""), ("str", "x" * 100_000),
                         ("bytes", b"\xff\xfe\x00bad"), ("floats", [math.nan, 1.0]), ("floats", []),
                         ("strs", ["a", "b"]), ("bool", True), ("str", "\x00"), ("str", "1.0")]),
        hostile_name().map(lambda s: ("str", s)),
    )
    specific = {
        "status": st.sampled_from(STATUSES).map(lambda s: ("str", s)),
        "format": st.sampled_from(["dojo-storage", "other", "", "DOJO-STORAGE", "dojo-storage "]).map(lambda s: ("str", s)),
        "format_version": st.sampled_from([0, 1, 2, -1, 999, 2**62]).map(lambda v: ("int", v))
        | st.sampled_from([1.5, math.nan]).map(lambda v: ("float", v)) | st.just(("str", "1")),
        "steps_completed": st.sampled_from([-1, 0, 1, 3, 10**9, 2**62]).map(lambda v: ("int", v)),
        "failed_steps": st.sampled_from([-1, 0, 5, 10**9]).map(lambda v: ("int", v)),
        "timestep": st.sampled_from([0.0, -0.01, math.nan, math.inf, 1e-300, 1e300]).map(lambda v: ("float", v)),
        "gravity": st.sampled_from([[], [1.0], [math.nan, 0.0, 0.0], [1e300, 0.0, 0.0], [0.0, 0.0, -9.81, 1.0]]).map(
            lambda v: ("floats", v)),
        "solver_options": st.sampled_from(["{", "[]", "null", "NaN", '{"rtol": "x"}', '{"max_iter": 1e308}',
                                           '{"max_iter": -1}', '{"rtol": NaN}', '{"bogus": 1}', "",
                                           '{"rtol": 1e-6, "rtol": 2}']).map(lambda s: ("str", s)),
        "names": st.sampled_from([("strs", []), ("strs", ["a"] * 9), ("strs", ["\x00"]), ("strs", ["", ""]),
                                  ("floats", [1.0]), ("str", "link"), ("strs", ["ünï", "b"])]),
        "scene": st.one_of(
            scene_cases(allow_text_damage=False).map(lambda c: ("str", c.text.decode("utf-8", "replace"))),
            raw_fragment().map(lambda f: ("str", f"name: x\nbodies: {f}\n")),
            st.sampled_from(["", "\x00", "name: a\x00b\n", "[", "42", "bodies: &b [*b]\n"]).map(lambda s: ("str", s)),
            st.just(("bytes", b"name: \xff\xfe\n")),
        ),
    }
    return specific.get(name, generic) | generic


@dataclass
class StorageCase:
    base: str
    ops: list
    reader: list[str]


def damage_ops(layout: Layout):
    targets = ("/",) + layout.datasets + layout.groups
    attr_pairs = layout.attrs + tuple(("/", a) for a in ATTR_NAMES_EXTRA) + tuple(
        (d, "names") for d in layout.datasets if d in ("x", "minimal/q", "minimal/v"))
    h5op = st.one_of(
        st.tuples(st.just("dataset"), st.sampled_from(layout.datasets), st.sampled_from(DATASET_DAMAGE),
                  st.integers(0, 2**16)),
        st.tuples(st.just("attr"), st.sampled_from(attr_pairs)).flatmap(
            lambda t: st.tuples(st.just("attr"), st.just(t[1]), attr_value(t[1][1]))),
        st.tuples(st.just("attr_delete"), st.sampled_from(attr_pairs)),
        st.tuples(st.just("delete_group"), st.sampled_from(layout.groups or ("/",))),
        st.tuples(st.just("add"), st.sampled_from(targets), st.sampled_from(["dataset", "group", "link_loop"])),
    )
    byteop = st.one_of(
        st.tuples(st.just("truncate"), st.integers(0, layout.size)),
        st.tuples(st.just("overwrite"), st.integers(0, layout.size), st.binary(min_size=1, max_size=64)),
        st.tuples(st.just("zero"), st.integers(0, layout.size), st.integers(1, 4096)),
        st.tuples(st.just("flip"), st.integers(0, max(0, layout.size - 1)), st.integers(0, 7)),
    )
    foreign = st.tuples(st.just("foreign"), st.sampled_from(
        ["empty", "text", "random", "png", "yaml", "json", "hdf5_empty", "hdf5_other", "hdf5_array", "directory",
         "symlink_loop", "dev_null"]))
    return st.one_of(
        st.lists(h5op, min_size=1, max_size=3),
        st.lists(h5op, min_size=0, max_size=2).flatmap(lambda a: st.lists(byteop, min_size=1, max_size=2).map(lambda b: a + b)),
        foreign.map(lambda f: [f]),
    )


def reader_argv(base_scene: str) -> st.SearchStrategy[list[str]]:
    """A reading command of RUN (the file name is filled in by the test)."""
    bad_float = st.sampled_from(["0", "-1", "nan", "inf", "1e300", "1e-300"])
    index = st.sampled_from(["0", "-1", "1", "3", "8", "9", "-9", "1000", "-1000", str(2**63), "99999999999999999999"])
    other_scene = st.sampled_from([base_scene] * 4 + ["pendulum", "box", "slider"])
    return st.one_of(
        st.sampled_from([["energy", "RUN"], ["energy", "RUN", "--json", "e.json"], ["energy", "RUN", "--csv", "e.csv"],
                         ["energy", "RUN", "--plot", "e.png"]]),
        st.sampled_from([["contacts", "RUN"], ["contacts", "RUN", "--json", "c.json"]]),
        st.tuples(st.just(["contacts", "RUN", "--gap"]), bad_float).map(lambda t: t[0] + [t[1]]),
        st.lists(st.sampled_from(["position", "minimal", "velocity", "inputs", "iterations", "residual", "distance",
                                  "bogus"]), max_size=3).map(
            lambda qs: ["plot", "RUN", "--png", "p.png"] + [a for q in qs for a in ("-q", q)]),
        st.just(["plot", "RUN", "--png", "p.png", "--csv", "p.csv"]),
        st.just(["replay", "RUN", "--html", "r.html"]),
        st.just(["replay", "RUN", "--html", "r.html", "--contacts", "--joints", "--frames"]),
        st.tuples(st.sampled_from(["--fps", "--speed", "--zoom"]), bad_float).map(
            lambda t: ["replay", "RUN", "--html", "r.html", t[0], t[1]]),
        st.tuples(other_scene, index).map(lambda t: ["step", t[0], "--from", "RUN", "--index", t[1]]),
        st.tuples(other_scene, index).map(lambda t: ["gradients", t[0], "--from", "RUN", "--index", t[1]]),
    )


# ------------------------------------------------------------------ URDFs
URDF_FILES = ("robot.urdf",) * 12 + ("malformed.urdf", "missing_link.urdf", "missing_mesh.urdf",
                                    "unknown_joint_type.urdf", "unresolved_mesh.urdf")
NUMERIC_ATTRS = {"value", "ixx", "ixy", "ixz", "iyy", "iyz", "izz", "xyz", "rpy", "lower", "upper", "effort",
                 "velocity", "damping", "friction", "size", "radius", "length", "scale", "rgba"}
URDF_NUMBERS = ["1e-9", "1e6", "1e12", "1e-12", "100", "0.001", "1e100", "1e150", "nan", "NaN", "inf", "-inf", "1e300", "-1e300", "-1", "0", "-0", "1e-300", "abc", "", " ", "1 2",
                "1,2,3", "0x10", "1e99999", "9" * 400, "1 2 3 4 5", "nan nan nan", "1e300 1e300 1e300", "0 0 0",
                "1e-320 0 0", "+", "1e", "1 inf 1"]
JOINT_TYPES = ["revolute", "continuous", "prismatic", "fixed", "floating", "planar", "spherical", "hinge", "",
               "REVOLUTE", "ünï", "revolute ", "ball"]
MESH_PATHS = ["x" * 5000, "/" + "/".join(["d" * 255] * 20) + "/m.stl", "a" * 300 + ".stl", "nonexistent.stl",
              "package://nopkg/m.stl", "package://fixture_pkg/meshes/missing.obj", "package://", "package:///",
              "file:///etc/passwd", "/etc/passwd", "/dev/null", "/", ".", "..", "", "http://127.0.0.1:9/x.stl",
              "~/.ssh/id_rsa", "m.STL", "m.dae", "%00", "C:\\x\\y.stl", "ünï.obj"]
XML_DAMAGE = ("xxe_file", "xxe_param", "billion_laughs", "external_dtd", "deep", "encoding", "bom", "empty",
              "not_robot", "truncate", "insert_bytes", "invalid_utf8", "huge_attr", "many_links", "pi_comment")


@dataclass
class UrdfCase:
    base: str
    text: bytes
    ops: list
    options: list[str]

    def __repr__(self) -> str:
        return f"UrdfCase(base={self.base!r}, ops={self.ops!r}, options={self.options!r}, {len(self.text)} bytes)"


def _elements(root):
    return [e for e in root.iter() if e is not root]


@st.composite
def urdf_cases(draw) -> UrdfCase:
    base = draw(st.sampled_from(URDF_FILES))
    text = (URDF_DIR / base).read_text(encoding="utf-8")
    ops = []
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        root = None
    if root is not None:
        for _ in range(draw(st.integers(1, 3))):
            op = draw(st.sampled_from(["number"] * 3 + ["remove", "joint_type", "name", "reference", "mesh",
                                                        "duplicate", "attr_remove", "unknown"]))
            elements = _elements(root)
            if not elements:
                break
            if op == "number":
                pairs = [(i, a) for i, e in enumerate(elements) for a in e.attrib if a in NUMERIC_ATTRS]
                if pairs:
                    i, a = draw(st.sampled_from(pairs))
                    old = elements[i].get(a).split()
                    value = draw(st.sampled_from(URDF_NUMBERS) | st.floats().map(repr))
                    if len(old) > 1 and draw(st.booleans()):
                        old[draw(st.integers(0, len(old) - 1))] = value
                        value = " ".join(old)
                    elements[i].set(a, value)
                    ops.append((op, elements[i].tag, a, value[:40]))
            elif op == "remove":
                i = draw(st.integers(0, len(elements) - 1))
                parent = next(p for p in root.iter() if elements[i] in list(p))
                parent.remove(elements[i])
                ops.append((op, elements[i].tag))
            elif op == "joint_type":
                joints = [e for e in elements if e.tag == "joint"]
                if joints:
                    j = draw(st.sampled_from(joints))
                    j.set("type", draw(st.sampled_from(JOINT_TYPES)))
                    ops.append((op, j.get("name"), j.get("type")))
            elif op == "name":
                named = [e for e in elements if "name" in e.attrib and e.tag in ("link", "joint", "material", "robot")]
                if named:
                    e = draw(st.sampled_from(named))
                    others = [x.get("name") for x in named]
                    e.set("name", draw(hostile_name().map(lambda s: s.replace("\x00", "")) | st.sampled_from(others)))
                    ops.append((op, e.tag, e.get("name")[:40]))
            elif op == "reference":
                refs = [e for e in elements if e.tag in ("parent", "child")]
                links = [e.get("name") for e in elements if e.tag == "link"]
                if refs:
                    e = draw(st.sampled_from(refs))
                    e.set("link", draw(st.sampled_from(links + ["nolink", "", "base"])))
                    ops.append((op, e.tag, e.get("link")))
            elif op == "mesh":
                geoms = [e for e in elements if e.tag == "geometry"]
                if geoms:
                    g = draw(st.sampled_from(geoms))
                    for c in list(g):
                        g.remove(c)
                    path = draw(st.sampled_from(MESH_PATHS))
                    ET.SubElement(g, "mesh", {"filename": path})
                    ops.append((op, path[:60]))
            elif op == "duplicate":
                tops = [e for e in list(root) if e.tag in ("link", "joint")]
                if tops:
                    root.append(copy.deepcopy(draw(st.sampled_from(tops))))
                    ops.append((op,))
            elif op == "attr_remove":
                withattr = [e for e in elements if e.attrib]
                if withattr:
                    e = draw(st.sampled_from(withattr))
                    a = draw(st.sampled_from(sorted(e.attrib)))
                    del e.attrib[a]
                    ops.append((op, e.tag, a))
            else:
                e = draw(st.sampled_from(elements + [root]))
                ET.SubElement(e, draw(st.sampled_from(["unknown", "link", "joint", "inertial", "mass", "origin"])),
                              {"value": draw(st.sampled_from(URDF_NUMBERS))})
                ops.append((op, e.tag))
        text = ET.tostring(root, encoding="unicode")
    data = text.encode("utf-8")
    if draw(st.integers(0, 3)) == 0:
        op, data = draw(xml_damage(data))
        ops.append(op)
    options = []
    if draw(st.booleans()):
        options.append("--floating")
    options += ["--contacts", draw(st.sampled_from(["none", "feet", "collision"]))]
    if draw(st.booleans()):
        options.append("--merge-fixed")
    if draw(st.integers(0, 3)) == 0:
        options.append("--no-meshes")
    if draw(st.integers(0, 3)) == 0:
        options += ["--geometry", "collision"]
    if draw(st.integers(0, 9)) > 0:
        options += ["--package-path", str(PACKAGES)]
    if draw(st.integers(0, 9)) == 0:
        options += [draw(st.sampled_from(["--friction", "--timestep"])),
                    draw(st.sampled_from(["nan", "inf", "-1", "0", "1e300", "1e-300"]))]
    if draw(st.integers(0, 7)) == 0:
        options += ["--name", draw(control_string().filter(lambda s: not s.startswith("-")))]
    return UrdfCase(base, data, ops, options)


@st.composite
def xml_damage(draw, data: bytes):
    op = draw(st.sampled_from(XML_DAMAGE))
    text = data.decode("utf-8", errors="replace")
    body = text.split("?>", 1)[1] if text.startswith("<?xml") else text
    if op == "xxe_file":
        target = draw(st.sampled_from(["file:///etc/passwd", "file:///dev/zero", "file:///nonexistent",
                                       "http://127.0.0.1:9/x"]))
        doc = f'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY xxe SYSTEM "{target}">]>\n' + body
        doc = doc.replace('name="base"', 'name="&xxe;"', 1)
        return (op, target), doc.encode()
    if op == "xxe_param":
        doc = ('<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>\n' + body)
        return (op,), doc.encode()
    if op == "billion_laughs":
        levels = draw(st.integers(2, 9))
        ents = ['<!ENTITY l0 "lol">'] + [f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, levels)]
        doc = '<?xml version="1.0"?>\n<!DOCTYPE robot [' + "".join(ents) + "]>\n" + body
        doc = doc.replace('name="base"', f'name="&l{levels - 1};"', 1)
        return (op, levels), doc.encode()
    if op == "external_dtd":
        doc = '<?xml version="1.0"?>\n<!DOCTYPE robot SYSTEM "file:///nonexistent.dtd">\n' + body
        return (op,), doc.encode()
    if op == "deep":
        d = draw(st.integers(50, 100_000))
        doc = body.replace("</robot>", "<x>" * d + "</x>" * d + "</robot>")
        return (op, d), doc.encode()
    if op == "encoding":
        enc = draw(st.sampled_from(["utf-16", "latin-1", "bogus", "ebcdic-cp-us"]))
        return (op, enc), f'<?xml version="1.0" encoding="{enc}"?>\n{body}'.encode()
    if op == "bom":
        return (op,), b"\xef\xbb\xbf" + data
    if op == "empty":
        return (op,), draw(st.sampled_from([b"", b"\n", b"<?xml version='1.0'?>", b"<robot/>", b"<robot name=''/>"]))
    if op == "not_robot":
        return (op,), b'<?xml version="1.0"?>\n<sdf><model name="m"/></sdf>\n'
    if op == "truncate":
        at = draw(st.integers(0, len(data)))
        return (op, at), data[:at]
    if op == "insert_bytes":
        at = draw(st.integers(0, len(data)))
        junk = draw(st.binary(min_size=1, max_size=16))
        return (op, at, junk), data[:at] + junk + data[at:]
    if op == "invalid_utf8":
        at = draw(st.integers(0, len(data)))
        return (op, at), data[:at] + b"\xff\xc3" + data[at:]
    if op == "huge_attr":
        n = draw(st.integers(10_000, 5_000_000))
        return (op, n), body.replace('name="base"', f'name="{"b" * n}"', 1).encode()
    if op == "many_links":
        n = draw(st.integers(100, 5000))
        links = "".join(f'<link name="l{i}"/><joint name="j{i}" type="fixed"><parent link="base"/><child link="l{i}"/></joint>'
                        for i in range(n))
        return (op, n), body.replace("</robot>", links + "</robot>").encode()
    return (op,), ("<?xml version='1.0'?><?pi data?><!-- c -->" + body + "<!-- trailing -->").encode()
