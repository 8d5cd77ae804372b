"""YAML loading that remembers where things are.

Mappings load as LineDict and sequences as LineList; both know the line
they start on and the line of each key or item, so that a complaint about
any value can name file:line, and whether they are written in flow style
(`{...}`, `[...]`), which an edit of the text must know.  Duplicate keys are an error (PyYAML would
silently keep the last one, which is how a duplicated topic would vanish).

Takes YAML text; gives the data, the line of every key and item, and
the same data as plain dicts and lists (plain()).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ktopic.errors import KtopicError


class LineDict(dict):
    line: int = 0
    lines: dict
    flow: bool = False      # written {a: 1, b: 2}, not one key a line


class LineList(list):
    line: int = 0
    lines: list
    flow: bool = False      # written [a, b], not one "- " item a line
    end: tuple = (0, 0)     # line and column after its closing ] (flow)


# A manifest is tens of kilobytes and a few levels deep; anything far
# beyond is a mistake or an attack (an alias "bomb" expands exponentially,
# deep nesting exhausts the stack) and is refused before it is built.
MAX_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_NODES = 100_000             # after expanding aliases
# Digits of an integer: a manifest's are one or two (smp, version); one of
# thousands is refused before Python is asked to read or print it (int()
# refuses more than 4300 decimal digits, str() of a hex one as many).
MAX_DIGITS = 100
# What a tag's value is, for a value that is not one.
KINDS = {"int": "an integer", "float": "a number", "timestamp": "a date", "bool": "a boolean"}


class Loader(yaml.SafeLoader):
    depth = 0

    def __init__(self, stream):
        super().__init__(stream)
        self.open: set[str] = set()     # anchors of the nodes being composed

    def compose_node(self, parent, index):
        """Nodes deeper than MAX_DEPTH are refused before the recursion
        that composes them exhausts the stack; so is an alias inside the
        node its anchor names (`x: &a [*a]`), a value that never ends."""
        self.depth += 1
        try:
            event = self.peek_event()
            if self.depth > MAX_DEPTH:
                raise KtopicError(f"nesting deeper than {MAX_DEPTH} levels",
                                  self.name, event.start_mark.line + 1)
            if isinstance(event, yaml.AliasEvent):
                if event.anchor in self.open:
                    raise KtopicError(f"alias *{event.anchor} is inside the value &{event.anchor} "
                                      f"names (a recursive alias)",
                                      self.name, event.start_mark.line + 1)
                return super().compose_node(parent, index)
            anchor = event.anchor
            if anchor is not None:
                self.open.add(anchor)
            try:
                return super().compose_node(parent, index)
            finally:
                self.open.discard(anchor)
        finally:
            self.depth -= 1

    def construct_object(self, node, deep=False):
        """A value Python cannot make of the text (a timestamp that is no
        date, `!!int 12a`) is refused at its line, not raised as the
        ValueError of the constructor."""
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError, KeyError) as e:    # KeyError: `!!bool x`
            tag = str(node.tag).rsplit(":", 1)[-1]
            what = KINDS.get(tag, f"a !!{tag} value")
            why = "" if isinstance(e, KeyError) else f" ({e})"
            raise KtopicError(f"{shown(str(node.value))!r} is not {what}{why}: quote it "
                              f"to make it text", self.name, node.start_mark.line + 1) from None


def shown(text: str, most: int = 80) -> str:
    """text as a one-line error may show it: a lone surrogate (which no
    terminal can print) as its \\udXXX escape, and at most `most`
    characters."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= most else text[:most] + "..."


def _construct_int(loader: Loader, node: yaml.ScalarNode) -> int:
    value = loader.construct_scalar(node)
    digits = value.replace("_", "").lstrip("+-")
    if digits[:2].lower() in ("0x", "0b", "0o"):
        digits = digits[2:]
    if len(digits) > MAX_DIGITS:
        raise KtopicError(f"an integer of {len(digits)} digits: too large to be read",
                          loader.name, node.start_mark.line + 1)
    return yaml.SafeLoader.construct_yaml_int(loader, node)


def _construct_mapping(loader: Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    d = LineDict()
    d.line = node.start_mark.line + 1
    d.lines = {}
    d.flow = bool(node.flow_style)
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise KtopicError("a key must be a plain value, not a list or mapping",
                              loader.name, key_node.start_mark.line + 1)
        key = loader.construct_object(key_node, deep=True)
        if key in d:
            raise KtopicError(f"duplicate key {key!r} (first at line {d.lines[key]})",
                              loader.name, key_node.start_mark.line + 1)
        d[key] = loader.construct_object(value_node, deep=True)
        d.lines[key] = key_node.start_mark.line + 1
    return d


def _construct_sequence(loader: Loader, node: yaml.SequenceNode) -> LineList:
    seq = LineList(loader.construct_object(n, deep=True) for n in node.value)
    seq.line = node.start_mark.line + 1
    seq.lines = [n.start_mark.line + 1 for n in node.value]
    seq.flow = bool(node.flow_style)
    seq.end = (node.end_mark.line + 1, node.end_mark.column)
    return seq


Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)
Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _decode(data: bytes, name: str) -> str:
    if len(data) > MAX_BYTES:
        raise KtopicError(f"larger than a manifest can be (more than {MAX_BYTES} bytes)", name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise KtopicError(f"not UTF-8 (byte 0x{data[e.start]:02x})", name, line) from None


def _check_size(node, name: str) -> None:
    """Refuse a document that expands (aliases counted as copies) to more
    than MAX_NODES nodes; names the alias that crosses the bound."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()         # nodes being counted: one met again is a cycle

    def size(n) -> int:
        if id(n) in sizes:
            return sizes[id(n)]
        if id(n) in open_:
            raise KtopicError("a value contains itself (a recursive alias)", name,
                              n.start_mark.line + 1)
        open_.add(id(n))
        total = 1
        if isinstance(n, yaml.SequenceNode):
            total += sum(size(c) for c in n.value)
        elif isinstance(n, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in n.value)
        if total > MAX_NODES:
            raise KtopicError(f"aliases expand to more than {MAX_NODES} values "
                              f"(an alias bomb?)", name, n.start_mark.line + 1)
        sizes[id(n)] = total
        open_.discard(id(n))
        return total
    size(node)


def read(path: Path, display: str | None = None) -> bytes:
    """The bytes of a YAML file, read once: what is parsed is what a
    caller keys its cache on."""
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise KtopicError(f"cannot read: {e.strerror}", display or str(path)) from None


def load(path: Path, display: str | None = None, data: bytes | None = None):
    """Load a YAML file (data: its bytes, as read()); errors name display
    (or path) and the line."""
    name = display or str(path)
    if data is None:
        data = read(path, name)
    text = _decode(data, name)
    loader = None
    try:
        loader = Loader(text)          # reads (and checks) the characters
        loader.name = name
        node = loader.get_single_node()
        if node is None:
            return None
        _check_size(node, name)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        raise KtopicError(f"YAML syntax error: {e.problem or e.context}", name, line) from None
    except yaml.reader.ReaderError as e:
        line = text[:e.position].count("\n") + 1
        raise KtopicError(f"YAML syntax error: character #x{e.character:04x} is not allowed "
                          f"in YAML", name, line) from None
    finally:
        if loader is not None:
            loader.dispose()


def line_of(root, path) -> int | None:
    """The line of the value at path (a sequence of keys and indexes) in a
    tree that load() returned: the deepest position that is known."""
    line = getattr(root, "line", None)
    node = root
    for key in path:
        if isinstance(node, LineDict) and key in node:
            line = node.lines.get(key, line)
            node = node[key]
        elif isinstance(node, LineList) and isinstance(key, int) and key < len(node):
            line = node.lines[key]
            node = node[key]
        else:
            break
    return line


def plain(v):
    """A loaded value as plain dicts and lists (no lines attached), which
    yaml.dump can write and a dataclass can keep."""
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v
