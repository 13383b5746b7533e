"""The topology's names: a tree of families (`node[2] { gpu g[8] }` makes `node.g`, a table
of device ids of shape (2, 8)), and how indexing and members of a name yield devices or a
shared resource (`Namespace`), as `evaluate` asks while a file elaborates."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ElaborationError, Span
from ..language import syntax as ast
from ..model.values import Devices, NeedScalar, SharedRef, TopoRef
from .indexing import check_index


@dataclass
class Family:
    """A declared name: a host family, a device family or a shared resource, maybe indexed."""

    kind: str  # host | gpu | nic | switch | shared
    size: int | None  # None: a single item, not indexed
    span: Span
    children: dict[str, Family] = field(default_factory=dict)
    table: np.ndarray | None = None  # ids, one axis per sized family along the path


class Namespace:
    """The topology's names and how indexing them yields devices."""

    def __init__(self) -> None:
        self.root: dict[str, Family] = {}

    def family(self, path: tuple[str, ...]) -> Family:
        families = self.root
        for name in path[:-1]:
            families = families[name].children
        return families[path[-1]]

    def _sized(self, path: tuple[str, ...]) -> list[int]:
        sizes, families = [], self.root
        for name in path:
            fam = families[name]
            if fam.size is not None:
                sizes.append(fam.size)
            families = fam.children
        return sizes

    def settle(self, ref: TopoRef) -> object:
        """A reference becomes devices (or a shared resource) once indexed far enough."""
        fam = self.family(ref.path)
        sized = self._sized(ref.path)
        if fam.kind == "host" or fam.table is None:
            return ref
        complete = len(ref.indices) == len(sized)
        group = fam.size is not None and len(ref.indices) == len(sized) - 1
        if not (complete or group):
            return ref
        lanes = any(isinstance(i, np.ndarray) for i in ref.indices)
        ids = fam.table[tuple(ref.indices)] if ref.indices else fam.table
        if fam.kind == "shared":
            if lanes:
                raise NeedScalar
            return SharedRef(int(ids)) if complete else ref
        return Devices(np.asarray(ids, dtype=np.int64), lanes)

    def index(self, ref: TopoRef, index, node: ast.Index) -> object:
        fam = self.family(ref.path)
        name = ".".join(ref.path)
        if fam.size is None:
            raise ElaborationError(f"'{name}' is a single {fam.kind}, not a family; it has no index",
                                   node.span)
        if len(ref.indices) == len(self._sized(ref.path)):
            raise ElaborationError(f"'{name}' is indexed twice", node.span)
        check_index(index, fam.size, node.index.span, f"family '{name}' of {fam.size}")
        return self.settle(TopoRef(ref.path, (*ref.indices, index)))

    def member(self, ref: TopoRef, name: str, node: ast.Attr) -> object:
        fam = self.family(ref.path)
        where = ".".join(ref.path)
        if fam.kind != "host":
            raise ElaborationError(f"'{where}' has no members", node.span)
        if len(ref.indices) < len(self._sized(ref.path)):
            raise ElaborationError(f"'{where}' is a family of {fam.size} hosts; index it first, "
                                   f"as in {where}[0].{name}", node.span)
        if name not in fam.children:
            members = ", ".join(fam.children) or "none"
            raise ElaborationError(f"host '{where}' has no member '{name}' (members: {members})",
                                   node.span)
        return self.settle(TopoRef((*ref.path, name), ref.indices))
