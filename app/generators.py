"""Optional generator backends: turn the evidence an extractive answer cites into prose.

The extractive answer is always given; a generator only adds a paragraph written from the cited sentences, which
it is told to cite as ``[n]`` (the citations' ranks). Generators are off by default and never reach the internet on
their own:

- ``hf:/path/to/model`` — a Hugging Face model folder on this machine (causal or encoder-decoder), loaded with
  ``local_files_only=True`` and without remote code, decoding greedily;
- ``openai:http://127.0.0.1:PORT[/v1][?model=NAME]`` — an OpenAI-compatible server (llama.cpp, vLLM, Ollama, ...)
  on this machine: any host other than a loopback address is refused, proxies are bypassed and redirects are not
  followed.

``parse_generator`` turns such a spec into a ``Generator``; ``""`` (or ``"off"``) means no generator.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol


class Citation(Protocol):
    """What a generator reads of a citation."""

    title: str
    page: int | None
    text: str


OFF = ("", "off")  # specs that mean "no generator"
SPEC_FORMS = "'hf:/path/to/model-folder' or 'openai:http://127.0.0.1:PORT[/v1][?model=NAME]' ('' or 'off': none)"
DEFAULT_MAX_NEW_TOKENS = 128
DEFAULT_TIMEOUT_S = 120.0
INSTRUCTION = (
    "Answer the question using only the numbered evidence below. Cite the evidence you use as [n]. "
    "If the evidence does not answer the question, say so."
)


class GeneratorError(Exception):
    """A generator could not produce text (model not loadable, server unreachable, bad answer); one line."""


class Generator(Protocol):
    name: str  # how its output is labelled, e.g. "hf:/models/qwen"

    def generate(self, question: str, citations: Sequence[Citation]) -> str:
        """Prose answering ``question`` from the ``citations`` (cited as [1]..[n] in their order)."""
        ...


def parse_generator(spec: str, max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS) -> Generator | None:
    """The generator named by ``spec`` (None for ``""`` or ``"off"``); ValueError for anything else, naming the spec
    and the accepted forms. Nothing is loaded or contacted here."""
    spec = spec.strip()
    if spec in OFF:
        return None
    kind, colon, target = spec.partition(":")
    if colon and kind == "hf" and target:
        return HFGenerator(Path(target).expanduser(), max_new_tokens)
    if colon and kind == "openai" and target:
        return OpenAIGenerator.from_url(target, max_new_tokens)
    raise ValueError(f"unknown generator '{spec}': expected {SPEC_FORMS}")


# ----------------------------------------------------------------------------------------------- prompt


def build_prompt(question: str, citations: Sequence[Citation], quotes: Sequence[str] | None = None) -> str:
    """The instruction, the numbered evidence ``[1] title, page p: "quote"`` and the question, in that order (the
    question last, so that a completion model continues with the answer). ``quotes`` replace the citations' texts
    (the first ``len(quotes)`` citations), to fit a shorter context."""
    texts = [" ".join(c.text.split()) for c in citations] if quotes is None else list(quotes)
    lines = [INSTRUCTION, "", "Evidence:"]
    for rank, (citation, text) in enumerate(zip(citations, texts, strict=False), start=1):
        where = citation.title + (f", page {citation.page}" if citation.page is not None else "")
        lines.append(f'[{rank}] {where}: "{text}"')
    lines += ["", f"Question: {' '.join(question.split())}", "Answer:"]
    return "\n".join(lines)


def fit_prompt(question: str, citations: Sequence[Citation], fits: Callable[[str], bool]) -> str:
    """The fullest prompt that ``fits``: all the evidence, else the best-ranked quotes (the lowest-ranked dropped
    first, so [n] keeps naming citation n), else the first quote cut to its longest fitting beginning. The question
    is always kept whole; GeneratorError when not even one word of evidence fits beside it."""
    quotes = [" ".join(c.text.split()) for c in citations]
    for count in range(len(quotes), 0, -1):
        prompt = build_prompt(question, citations, quotes[:count])
        if fits(prompt):
            return prompt
    if not quotes:
        prompt = build_prompt(question, citations)
        if fits(prompt):
            return prompt
        raise GeneratorError("the question is too long for the model's context")
    words = quotes[0].split()
    low, high = 0, len(words) - 1  # the longest fitting cut of the first quote has between low and high words
    while low < high:
        middle = (low + high + 1) // 2
        if fits(build_prompt(question, citations, [" ".join(words[:middle]) + " …"])):
            low = middle
        else:
            high = middle - 1
    if not low:
        raise GeneratorError("the question leaves no room for any evidence in the model's context")
    return build_prompt(question, citations, [" ".join(words[:low]) + " …"])


# ----------------------------------------------------------------------------------------------- local model

_MODELS: dict[Path, tuple[Any, Any]] = {}  # resolved folder -> (tokenizer, model), loaded once per process
_MODELS_LOCK = threading.Lock()


def _load(folder: Path) -> tuple[Any, Any]:
    """The tokenizer and model in ``folder`` (causal LM, or seq2seq when the config is encoder-decoder), loaded
    from local files only, without remote code, once per process."""
    with _MODELS_LOCK:
        if folder not in _MODELS:
            from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer
            from transformers.utils import logging as hf_logging

            bars = hf_logging.is_progress_bar_enabled()
            hf_logging.disable_progress_bar()  # no "Loading weights" bar on the CLI's stderr
            try:
                config = AutoConfig.from_pretrained(folder, local_files_only=True)
                auto = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
                model = auto.from_pretrained(folder, config=config, local_files_only=True).eval()
                tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            except Exception as error:  # transformers raises OSError, ValueError, KeyError ... for a bad folder
                raise GeneratorError(f"cannot load the model in {folder}: {error}") from error
            finally:
                if bars:
                    hf_logging.enable_progress_bar()
            _MODELS[folder] = tokenizer, model
        return _MODELS[folder]


def _context_tokens(config: Any, tokenizer: Any) -> int | None:
    """The longest input the model takes, from its config or tokenizer (None when neither says)."""
    limits = [getattr(config, name, None) for name in ("max_position_embeddings", "n_positions", "seq_length")]
    limits.append(getattr(tokenizer, "model_max_length", None))
    known = [int(n) for n in limits if isinstance(n, int) and 0 < n < 1_000_000]
    return min(known) if known else None


class HFGenerator:
    """A local Hugging Face model folder, decoding greedily (the same evidence gives the same prose)."""

    def __init__(self, folder: Path, max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS) -> None:
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be positive, got {max_new_tokens}")
        if not folder.is_dir():
            raise ValueError(f"generator 'hf:{folder}': no model folder at {folder}")
        if not (folder / "config.json").is_file():
            raise ValueError(f"generator 'hf:{folder}': {folder} is not a Hugging Face model folder (no config.json)")
        self.folder = folder.resolve()
        self.max_new_tokens = max_new_tokens
        self.name = f"hf:{folder}"

    def generate(self, question: str, citations: Sequence[Citation]) -> str:
        tokenizer, model = _load(self.folder)
        context = _context_tokens(model.config, tokenizer)
        budget = None
        if context is not None:
            budget = context if model.config.is_encoder_decoder else context - self.max_new_tokens
            if budget <= 0:
                raise GeneratorError(
                    f"{self.max_new_tokens} new tokens leave no room for a prompt in the model's "
                    f"{context}-token context"
                )

        def fits(prompt: str) -> bool:
            return budget is None or len(self._encode(tokenizer, prompt)) <= budget

        return self.complete(fit_prompt(question, citations, fits))

    def complete(self, prompt: str) -> str:
        """The model's greedy continuation of ``prompt`` (wrapped in the chat template when the tokenizer has
        one), special tokens left out."""
        import torch

        tokenizer, model = _load(self.folder)
        ids = torch.tensor([self._encode(tokenizer, prompt)])
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        try:
            with torch.inference_mode():
                output = model.generate(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=self.max_new_tokens,
                    do_sample=False,
                    num_beams=1,
                    pad_token_id=pad,
                )
        except (RuntimeError, ValueError) as error:
            raise GeneratorError(f"the model in {self.folder} failed to generate: {error}") from error
        new = output[0] if model.config.is_encoder_decoder else output[0, ids.shape[1] :]
        text = tokenizer.decode(new, skip_special_tokens=True).strip()
        if not text:
            raise GeneratorError(f"the model in {self.folder} generated no text")
        return text

    @staticmethod
    def _encode(tokenizer: Any, prompt: str) -> list[int]:
        if getattr(tokenizer, "chat_template", None):
            messages = [{"role": "user", "content": prompt}]
            prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            return tokenizer(prompt, add_special_tokens=False)["input_ids"]
        return tokenizer(prompt)["input_ids"]


# ----------------------------------------------------------------------------------------------- local server


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine: ``localhost``, 127.0.0.0/8 or ::1 (no name is looked up)."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are answered, not followed: a local server must not send a request anywhere else."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class OpenAIGenerator:
    """An OpenAI-compatible chat-completions server on this machine (``POST {base}/v1/chat/completions``)."""

    def __init__(
        self,
        base_url: str,
        model: str = "local",
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)
        spec = f"openai:{base_url}"
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"generator '{spec}': expected an http:// or https:// URL with a host, e.g. {SPEC_FORMS}")
        if not is_loopback(parts.hostname):
            raise ValueError(
                f"generator '{spec}': {parts.hostname} is not this machine; a generator never reaches the internet "
                "on its own, so only localhost, 127.0.0.0/8 and ::1 are accepted"
            )
        try:
            parts.port  # noqa: B018 (raises ValueError for a port that is not a number in 0-65535)
        except ValueError as error:
            raise ValueError(f"generator '{spec}': {error}") from error
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be positive, got {max_new_tokens}")
        root = parts.path.rstrip("/").removesuffix("/v1")
        self.url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, f"{root}/v1/chat/completions", "", ""))
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.timeout_s = timeout_s
        base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, root, "", ""))
        self.name = f"openai:{base}" + (f" (model {model})" if model != "local" else "")
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())

    @classmethod
    def from_url(cls, url: str, max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS) -> OpenAIGenerator:
        """From ``http://host:port[/v1][?model=NAME]``."""
        parts = urllib.parse.urlsplit(url)
        query = urllib.parse.parse_qs(parts.query)
        unknown = sorted(set(query) - {"model"})
        if unknown:
            raise ValueError(f"generator 'openai:{url}': unknown option {', '.join(unknown)} (only ?model=NAME)")
        model = query.get("model", ["local"])[-1]
        return cls(urllib.parse.urlunsplit(parts._replace(query="", fragment="")), model, max_new_tokens)

    def generate(self, question: str, citations: Sequence[Citation]) -> str:
        return self.complete(build_prompt(question, citations))

    def complete(self, prompt: str) -> str:
        """The server's greedy (temperature 0) answer to ``prompt`` as one user message."""
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": self.max_new_tokens,
            "temperature": 0,
            "stream": False,
        }
        request = urllib.request.Request(
            self.url,
            data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
            method="POST",
        )
        try:
            with self._opener.open(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raise GeneratorError(self._http_error(error)) from error
        except urllib.error.URLError as error:
            reason = error.reason
            if isinstance(reason, ConnectionRefusedError):
                raise GeneratorError(f"connection refused by {self.url}: is the server running?") from error
            if isinstance(reason, TimeoutError):
                raise GeneratorError(f"no answer from {self.url} within {self.timeout_s:g} s") from error
            raise GeneratorError(f"cannot reach {self.url}: {reason}") from error
        except TimeoutError as error:
            raise GeneratorError(f"no answer from {self.url} within {self.timeout_s:g} s") from error
        except OSError as error:  # the connection broke while reading
            raise GeneratorError(f"the connection to {self.url} failed: {error}") from error
        try:
            answer = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise GeneratorError(f"the answer of {self.url} is not JSON: {raw[:80]!r}") from error
        try:
            text = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as error:
            raise GeneratorError(f"the answer of {self.url} has no choices[0].message.content") from error
        if not isinstance(text, str) or not text.strip():
            raise GeneratorError(f"{self.url} generated no text")
        return text.strip()

    def _http_error(self, error: urllib.error.HTTPError) -> str:
        if 300 <= error.code < 400:
            return (
                f"{self.url} redirected to {error.headers.get('Location', '?')}; redirects are not followed (a "
                "generator never reaches the internet on its own)"
            )
        detail = error.read(2000).decode("utf-8", "replace")
        try:
            detail = json.loads(detail)["error"]["message"]
        except (json.JSONDecodeError, KeyError, TypeError):
            pass
        detail = " ".join(str(detail).split())[:200]
        return f"{self.url} answered HTTP {error.code} {error.reason}" + (f": {detail}" if detail else "")
