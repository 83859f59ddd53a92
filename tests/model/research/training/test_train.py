"""The smoke config trains, checkpoints, resumes to the same state, and its checkpoint answers and summarizes through
model.inference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from model.inference.indexpool_summarizer import IndexPoolSummarizer
from model.network.checkpoint import load_model
from model.research.evaluation.passages import document_text, split_passages
from model.research.evaluation.systems import Document, IndexPoolQA
from model.research.training.train import REPO, TrainConfig, Trainer

SMOKE = REPO / "configs" / "train_smoke.json"
pytestmark = pytest.mark.skipif(
    not TrainConfig.from_json(SMOKE).data_dir().is_dir(), reason="the shared data folder (../shared/data) is absent"
)


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def final_state(out: Path) -> dict[str, torch.Tensor]:
    return torch.load(out / "indexpool.pt", map_location="cpu", weights_only=True)["state"]


def test_smoke_trains_resumes_and_answers(tmp_path: Path) -> None:
    cfg = TrainConfig.from_json(SMOKE)
    full, split = tmp_path / "full", tmp_path / "split"
    assert Trainer(cfg, full, resume=False).run()
    assert (full / "model_card.md").read_text().startswith("# IndexPool model card")
    assert (full / "indexpool.pt").stat().st_size < 50 * 2**20

    # interrupted after 7 steps (inside the retrieval stage, after a checkpoint), then resumed
    assert not Trainer(cfg, split, resume=False, max_steps=7).run()
    state = torch.load(split / "work" / "last.pt", map_location="cpu", weights_only=False)
    assert (state["stage"], state["step"]) == (1, 1) and state["optimizer"] is not None
    assert Trainer(cfg, split, resume=True).run()
    a, b = final_state(full), final_state(split)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)

    docs = [
        Document("readme", (REPO / "README.md").read_text()),
        Document("other", "Nothing here.\n\nA second paragraph about cats."),
    ]
    model = load_model(full / "indexpool.pt")
    qa = IndexPoolQA(model)
    qa.index(docs)
    response = qa.ask("How do I install the project?", 5)
    passages = {(p.doc, p.start, p.end) for d in docs for p in split_passages(d.id, d.text)}
    assert 1 <= len(response.citations) <= 5
    assert all((c.doc, c.start, c.end) in passages for c in response.citations)
    assert response.answer and any(response.answer in d.text for d in docs)

    document = document_text("readme", docs[0].text)
    chosen = IndexPoolSummarizer(model).choose(document, 60)
    words = [len(document.sentence_text(i).split()) for i in chosen]
    assert chosen == sorted(set(chosen)) and sum(words) - max(words) < 60  # whole sentences until the budget


def test_config_rejects_unknown_fields(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"distill_stepz": 3}))
    with pytest.raises(ValueError, match="distill_stepz"):
        TrainConfig.from_json(path)
