"""Generator backends, all offline: a tiny randomly initialised GPT-2 that the test builds and saves, run directly
(``hf:``) and behind a real OpenAI-compatible HTTP server on 127.0.0.1 (``openai:``); then through the services,
the CLI and the Ask tab over a small library."""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from app.cli import main
from app.generators import (
    INSTRUCTION,
    GeneratorError,
    HFGenerator,
    OpenAIGenerator,
    build_prompt,
    fit_prompt,
    parse_generator,
)
from app.services import Services, UserError
from app.services.ask import Citation, GenerationFailed
from ingest.pipeline import parse_text

TIDES = (
    "Tidal power converts the energy of the tides into electricity. A tidal barrage holds water behind a dam at high "
    "tide and releases it through turbines. Tidal stream generators work like underwater wind turbines in fast "
    "currents. Lighthouses guide ships along dangerous coasts."
)
QUESTION = "What does a tidal barrage hold behind a dam?"
CITATIONS = [
    Citation(1, "tides.txt", "Tidal power", None, 63, 168, "A tidal barrage holds water behind a dam.", 3.2),
    Citation(2, "notes.pdf", "Notes", 4, 10, 60, "Tidal power converts the energy of the tides.", 1.5),
]
MAX_NEW_TOKENS = 8


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1-layer GPT-2 with random weights and a word-level tokenizer trained here, saved as a model folder."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-gpt2")
    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    texts = [TIDES, QUESTION, INSTRUCTION, "Evidence: Question: Answer: [1] [2] [3] page 4"]
    tokenizer.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=["[PAD]", "[UNK]", "[EOS]"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(fast),
        n_positions=256,
        n_embd=32,
        n_layer=1,
        n_head=2,
        bos_token_id=fast.eos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    model_folder: Path
    requests: list[dict[str, Any]]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet when a client gave up (the ``slow`` model's caller times out, and the reply 1.5 s later meets a
        closed socket): socketserver printed the traceback on stderr, inside a later test's captured stderr."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _ChatCompletions(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions`` answered by the tiny model; the model names ``broken``, ``garbage``,
    ``redirect`` and ``slow`` ask for a failure instead."""

    server: _Server

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, **body})
        model = body["model"]
        if self.path != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
        elif model == "broken":
            self._send(500, {"error": {"message": "model not loaded"}})
        elif model == "garbage":
            self._send(200, b"<html>not json</html>")
        elif model == "redirect":
            self.send_response(302)
            self.send_header("Location", "http://example.com/v1/chat/completions")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            if model == "slow":
                time.sleep(1.5)
            generator = HFGenerator(self.server.model_folder, body["max_tokens"])
            text = generator.complete(body["messages"][-1]["content"])
            self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]})

    def _send(self, status: int, payload: dict[str, Any] | bytes) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@pytest.fixture(scope="module")
def server(tiny_model: Path) -> Iterator[_Server]:
    """A real OpenAI-compatible HTTP server on 127.0.0.1 (a free port) running the tiny model."""
    httpd = _Server(("127.0.0.1", 0), _ChatCompletions)
    httpd.model_folder, httpd.requests = tiny_model, []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Services:
    services = Services(tmp_path_factory.mktemp("library"))
    parsed = parse_text("tides.txt", "Tidal power", "txt", TIDES, hashlib.sha256(TIDES.encode()).hexdigest())
    assert [e.status for e in services.ingest.ingest_texts([parsed], "energy")] == ["ingested"]
    services.library.share("energy", True)  # readable by the signed-in users of the app tests
    return services


# ----------------------------------------------------------------------------------------------- backends


def test_the_local_model_writes_the_same_prose_for_the_same_evidence(tiny_model: Path) -> None:
    generator = parse_generator(f"hf:{tiny_model}", max_new_tokens=MAX_NEW_TOKENS)
    assert isinstance(generator, HFGenerator) and generator.name == f"hf:{tiny_model}"
    text = generator.generate(QUESTION, CITATIONS)
    assert text.strip() and "[EOS]" not in text and "[PAD]" not in text
    assert HFGenerator(tiny_model, MAX_NEW_TOKENS).generate(QUESTION, CITATIONS) == text  # greedy: deterministic


def test_an_encoder_decoder_model_is_loaded_as_one(tiny_model: Path, tmp_path: Path) -> None:
    import torch
    from transformers import AutoTokenizer, T5Config, T5ForConditionalGeneration

    tokenizer = AutoTokenizer.from_pretrained(tiny_model, local_files_only=True)
    tokenizer.save_pretrained(tmp_path)
    torch.manual_seed(1)
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=1,
        num_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )
    model = T5ForConditionalGeneration(config)
    with torch.no_grad():  # T5's own initialisation makes a 1-layer model emit only padding
        for parameter in model.parameters():
            parameter.normal_(0, 0.5)
    model.save_pretrained(tmp_path)
    text = HFGenerator(tmp_path, MAX_NEW_TOKENS).generate(QUESTION, CITATIONS)
    assert text.strip() and "[PAD]" not in text


def test_the_prompt_numbers_the_evidence_and_ends_with_the_question() -> None:
    prompt = build_prompt(QUESTION, CITATIONS)
    assert prompt.startswith(INSTRUCTION) and "cite the evidence you use as [n]" in prompt.lower()
    assert '[1] Tidal power: "A tidal barrage holds water behind a dam."' in prompt
    assert '[2] Notes, page 4: "Tidal power converts the energy of the tides."' in prompt
    assert prompt.endswith(f"Question: {QUESTION}\nAnswer:")


def test_evidence_is_cut_to_the_context_and_the_question_kept(tiny_model: Path) -> None:
    def words_at_most(limit: int):  # noqa: ANN202
        return lambda prompt: len(prompt.split()) <= limit

    full = build_prompt(QUESTION, CITATIONS)
    assert fit_prompt(QUESTION, CITATIONS, words_at_most(1000)) == full
    one = fit_prompt(QUESTION, CITATIONS, words_at_most(len(full.split()) - 1))
    assert "[1]" in one and "[2]" not in one and one.endswith(f"Question: {QUESTION}\nAnswer:")  # lowest rank dropped
    cut = fit_prompt(QUESTION, CITATIONS, words_at_most(len(one.split()) - 2))
    assert '[1] Tidal power: "A tidal barrage holds water …"' in cut and QUESTION in cut
    with pytest.raises(GeneratorError, match="no room for any evidence"):
        fit_prompt(QUESTION, CITATIONS, words_at_most(len(build_prompt(QUESTION, []).split())))
    long = [Citation(1, "t", "Tidal power", None, 0, 1, " ".join([TIDES] * 40), 1.0), *CITATIONS]  # 1,500 words
    assert HFGenerator(tiny_model, MAX_NEW_TOKENS).generate(QUESTION, long).strip()  # cut to 256 positions


def test_specs_are_parsed_or_refused_with_the_accepted_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_generator("") is None and parse_generator("off") is None
    for spec in ("gpt-4", "hf:", "openai:", "HF:/models/x"):
        with pytest.raises(ValueError, match=rf"unknown generator '{spec}': expected 'hf:/path.*openai:http://127"):
            parse_generator(spec)
    with pytest.raises(ValueError, match=f"no model folder at {tmp_path / 'missing'}"):
        parse_generator(f"hf:{tmp_path / 'missing'}")
    with pytest.raises(ValueError, match="is not a Hugging Face model folder \\(no config.json\\)"):
        parse_generator(f"hf:{tmp_path}")

    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a refused generator must not touch the network")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    for url in ("http://example.com:8000", "http://10.0.0.5:8000/v1", "https://8.8.8.8", "http://localhost.evil.io"):
        with pytest.raises(ValueError, match="is not this machine; a generator never reaches the internet"):
            parse_generator(f"openai:{url}")
    with pytest.raises(ValueError, match="expected an http:// or https:// URL"):
        parse_generator("openai:ftp://127.0.0.1/v1")
    with pytest.raises(ValueError, match="unknown option temperature"):
        parse_generator("openai:http://127.0.0.1:8000?temperature=1")
    for url, endpoint, name in [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/v1/chat/completions", "openai:http://127.0.0.1:8000"),
        ("http://127.0.0.2:9/v1/", "http://127.0.0.2:9/v1/chat/completions", "openai:http://127.0.0.2:9"),
        ("http://[::1]:80/v1?model=qwen", "http://[::1]:80/v1/chat/completions", "openai:http://[::1]:80 (model qwen)"),
        ("http://localhost:1234/x/v1", "http://localhost:1234/x/v1/chat/completions", "openai:http://localhost:1234/x"),
    ]:
        generator = parse_generator(f"openai:{url}")
        assert isinstance(generator, OpenAIGenerator) and (generator.url, generator.name) == (endpoint, name)


def test_a_local_openai_server_running_the_model_answers(tiny_model: Path, server: _Server) -> None:
    port = server.server_address[1]
    generator = parse_generator(f"openai:http://127.0.0.1:{port}/v1", max_new_tokens=MAX_NEW_TOKENS)
    assert generator is not None
    text = generator.generate(QUESTION, CITATIONS)
    assert text == HFGenerator(tiny_model, MAX_NEW_TOKENS).complete(build_prompt(QUESTION, CITATIONS))
    request = server.requests[-1]
    assert request["path"] == "/v1/chat/completions" and request["model"] == "local"
    assert request["temperature"] == 0 and request["max_tokens"] == MAX_NEW_TOKENS and request["stream"] is False
    assert request["messages"] == [{"role": "user", "content": build_prompt(QUESTION, CITATIONS)}]


def test_a_failing_server_is_a_clear_error(server: _Server) -> None:
    base = f"http://127.0.0.1:{server.server_address[1]}"
    for model, message in [
        ("broken", r"/v1/chat/completions answered HTTP 500 Internal Server Error: model not loaded"),
        ("garbage", r"/v1/chat/completions is not JSON: b'<html>not json</html>'"),
        ("redirect", r"redirected to http://example.com/v1/chat/completions; redirects are not followed"),
    ]:
        with pytest.raises(GeneratorError, match=message):
            OpenAIGenerator(base, model).generate(QUESTION, CITATIONS)
    with pytest.raises(GeneratorError, match=r"answered HTTP 404 Not Found: no route /v2/v1/chat/completions"):
        OpenAIGenerator(f"{base}/v2").generate(QUESTION, CITATIONS)
    with pytest.raises(GeneratorError, match=r"no answer from .* within 0.5 s"):
        OpenAIGenerator(base, "slow", timeout_s=0.5).generate(QUESTION, CITATIONS)
    port = closed_port()
    with pytest.raises(GeneratorError, match=f"connection refused by http://127.0.0.1:{port}/v1/chat/completions"):
        OpenAIGenerator(f"http://127.0.0.1:{port}").generate(QUESTION, CITATIONS)


# ----------------------------------------------------------------------------------------------- services, CLI, app


def test_ask_keeps_the_extractive_answer_and_adds_the_prose(library: Services, tiny_model: Path) -> None:
    plain = library.ask.ask(["energy"], QUESTION, top_k=3, reader="bm25")
    spec = f"hf:{tiny_model}"
    answer = library.ask.ask(["energy"], QUESTION, top_k=3, reader="bm25", generator=spec)
    assert (answer.answer, answer.citations, answer.reader) == (plain.answer, plain.citations, plain.reader)
    assert answer.generated is not None and answer.generated.generator == spec and answer.generated.text.strip()
    assert list(answer.timings_ms)[-2:] == ["generate", "total"] and "generate" not in plain.timings_ms
    assert "generated" not in plain.to_json()
    assert answer.to_json() == plain.to_json() | {
        "generated": {"text": answer.generated.text, "generator": spec},
        "timings_ms": answer.timings_ms,
    }
    with pytest.raises(UserError, match="unknown generator 'gpt'"):
        library.ask.ask(["energy"], QUESTION, reader="bm25", generator="gpt")

    kept = library.sessions.create("with a generator")
    library.ask.ask(["energy"], QUESTION, top_k=3, reader="bm25", session_id=kept.id, generator=spec)
    (turn,) = Services(library.home).sessions.history(kept.id)  # the prose survives a restart
    assert (turn["generated"], turn["answer"]) == (answer.generated.text, plain.answer)
    exported = library.sessions.export(kept.id, "md")
    assert f"*{spec}* (generated from the citations):\n\n{answer.generated.text}" in exported
    assert exported.index(answer.generated.text) < exported.index("Extractive answer")

    session = library.sessions.create("with a broken generator")
    broken = f"openai:http://127.0.0.1:{closed_port()}"
    with pytest.raises(GenerationFailed, match=rf"^generator {broken} failed: connection refused") as failure:
        library.ask.ask(["energy"], QUESTION, top_k=3, reader="bm25", session_id=session.id, generator=broken)
    assert failure.value.answer.answer == plain.answer and failure.value.answer.generated is None
    (turn,) = library.sessions.history(session.id)  # the extractive answer was kept
    assert turn["answer"] == plain.answer and turn["settings"] == {"top_k": 3, "generator": broken}
    assert turn["generated"] is None


def test_cli_ask_json_includes_the_generated_prose(
    library: Services, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ask = ["--home", str(library.home), "ask", QUESTION, "--collection", "energy", "--reader", "bm25"]
    assert main([*ask, "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*ask, "--generator", f"hf:{tiny_model}", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["generated"]["generator"] == f"hf:{tiny_model}" and answer["generated"]["text"].strip()
    assert (answer["answer"], answer["citations"]) == (plain["answer"], plain["citations"])
    assert main([*ask, "--generator", f"hf:{tiny_model}"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"hf:{tiny_model} (generated from the citations):\n{answer['generated']['text']}\n")
    assert f"Extractive answer (quoted from the documents):\n{plain['answer']}\n" in printed

    port = closed_port()
    assert main([*ask, "--generator", f"openai:http://127.0.0.1:{port}", "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["answer"] == plain["answer"] and "generated" not in json.loads(out)
    assert err.startswith(f"indexpool: error: generator openai:http://127.0.0.1:{port} failed: connection refused")
    assert main([*ask, "--generator", "openai:http://example.com:8000"]) == 1
    out, err = capsys.readouterr()
    assert not out and "example.com is not this machine; a generator never reaches the internet" in err


def test_the_app_offers_its_generator_and_the_ask_tab_shows_the_prose(library: Services, tiny_model: Path) -> None:
    from app.ui import ask as ui
    from app.ui.common import escape_markdown

    home, spec = library.home, f"hf:{tiny_model}"
    with pytest.raises(UserError, match="unknown generator 'gpt'"):
        Services(home, generator="gpt")
    app = Services(home, generator=spec)
    assert (
        app.ask.generator_choices() == ["off", spec] and app.settings.settings("erin")["generator"] == spec
    )  # on by default
    app.settings.save({"reader": "bm25"}, "erin")
    request = SimpleNamespace(username="erin")
    text, citations, timing, _ = ui.ask(app, ["energy"], QUESTION, ui.NO_SESSION, request)  # type: ignore[arg-type]
    generated = app.ask.ask(["energy"], QUESTION, reader="bm25", generator=spec).generated
    assert generated is not None and text.startswith(f"**{escape_markdown(spec)}** (generated from the citations")
    assert escape_markdown(generated.text) in text and ui.EXTRACTIVE_LABEL in text
    assert "generate" in timing and not citations.empty
    session = app.sessions.create("history", "erin")
    ui.ask(app, ["energy"], QUESTION, session.id, request)  # type: ignore[arg-type]
    _, reply = ui._history(app, session.id, "erin")  # the session's history shows the prose above the quotes
    assert reply["content"].startswith(text.split(ui.EXTRACTIVE_LABEL)[0]) and ui.EXTRACTIVE_LABEL in reply["content"]
    with pytest.raises(UserError, match=r"unknown generator 'openai:http://127.0.0.1:1' \(this app offers: off, hf:"):
        app.settings.save({"generator": "openai:http://127.0.0.1:1"}, "erin")
    assert app.settings.save({"generator": "off"}, "erin")["generator"] == "off"
    text, _, timing, _ = ui.ask(app, ["energy"], QUESTION, ui.NO_SESSION, request)  # type: ignore[arg-type]
    assert "generated from" not in text and "generate" not in timing
    assert (
        Services(home).ask.generator_choices() == ["off"]
        and Services(home).settings.settings("frank")["generator"] == "off"
    )
