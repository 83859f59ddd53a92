"""JSON loading and saving shared by the project's configuration dataclasses."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Self


class JsonConfig:
    """Mixin for a ``@dataclass``: ``from_dict`` / ``from_json`` refuse unknown fields, ``to_json`` writes one."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Self:
        unknown = set(d) - {f.name for f in fields(cls)}  # type: ignore[arg-type]
        if unknown:
            raise ValueError(f"unknown {cls.__name__} fields: {sorted(unknown)}")
        return cls(**d)

    @classmethod
    def from_json(cls, path: str | Path) -> Self:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(asdict(self), indent=2)  # type: ignore[call-overload]
        if path is not None:
            Path(path).write_text(text)
        return text
