"""YAML loading that remembers where things are.

Mappings load as LineDict and sequences as LineList; both know the line
they start on and the line of each key or item, so that a complaint about
any value can name file:line.  Duplicate keys are an error (PyYAML would
silently keep the last one, which is how a duplicated topic would vanish).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ktopic.errors import KtopicError


class LineDict(dict):
    line: int = 0
    lines: dict


class LineList(list):
    line: int = 0
    lines: list


class _Loader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    d = LineDict()
    d.line = node.start_mark.line + 1
    d.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in d:
            raise KtopicError(f"duplicate key {key!r} (first at line {d.lines[key]})",
                              loader.name, key_node.start_mark.line + 1)
        d[key] = loader.construct_object(value_node, deep=True)
        d.lines[key] = key_node.start_mark.line + 1
    return d


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    seq = LineList(loader.construct_object(n, deep=True) for n in node.value)
    seq.line = node.start_mark.line + 1
    seq.lines = [n.start_mark.line + 1 for n in node.value]
    return seq


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load(path: Path, display: str | None = None):
    """Load a YAML file; errors name display (or path) and the line."""
    name = display or str(path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise KtopicError(f"cannot read: {e.strerror}", name) from None
    loader = _Loader(text)
    loader.name = name
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        raise KtopicError(f"YAML syntax error: {e.problem or e.context}", name, line) from None
    finally:
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
