"""What every tab of the app shares: services errors shown as toasts, the signed-in user, Markdown escaping, and
binding a module-level handler to the services."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

import gradio as gr

from app.services import Services

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|~:@])")  # ":" and "@": no autolinked web or mail address
PRIVATE = {"api_visibility": "private"}  # events the app's API does not expose
# private events that keep one tab's choices in step with another's: no loading overlay over the choices, which
# would take the user's clicks while the machine is busy indexing
IN_STEP = PRIVATE | {"show_progress": "hidden"}


def escape_markdown(text: str) -> str:
    """Quote document text literally inside Markdown (no emphasis, links or HTML from the source: a web address
    shows as its text, not as an autolink that would keep the escapes in its target)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def fail(error: Exception) -> str:
    """Show a services error as a warning toast and return it as a one-line message."""
    gr.Warning(str(error))
    return f"Error: {error}"


def user_of(request: gr.Request | None) -> str:
    """The signed-in user (``indexpool serve --auth``), "" without authentication."""
    return (request.username if request is not None else None) or ""


def bind(handler: Callable[..., Any], services: Services) -> Callable[..., Any]:
    """``handler`` with ``services`` as its first argument, keeping the signature and the type hints Gradio reads
    to pass ``gr.Request``, ``gr.SelectData`` and ``gr.Progress`` (``functools.partial`` hides the hints)."""
    if inspect.isgeneratorfunction(handler):

        def bound(*args: Any, **kwargs: Any) -> Any:
            yield from handler(services, *args, **kwargs)
    else:

        def bound(*args: Any, **kwargs: Any) -> Any:
            return handler(services, *args, **kwargs)

    hints = typing.get_type_hints(handler)  # evaluated in the handler's module, where its names live
    signature = inspect.signature(handler)
    parameters = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in signature.parameters.values()]
    bound.__signature__ = signature.replace(parameters=parameters[1:])  # type: ignore[attr-defined]
    bound.__annotations__ = {k: v for k, v in hints.items() if k != "services"}
    bound.__name__ = bound.__qualname__ = handler.__name__
    return bound
