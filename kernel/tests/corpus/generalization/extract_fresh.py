#!/usr/bin/env python3
"""Builds the fresh held-out split of the generalization corpus from unpacked
public packages that neither the first corpus nor the tuning split came from.

Usage: extract_fresh.py SRC_DIR CORPUS_DIR OUT_DIR

SRC_DIR holds one folder per archive, each the archive unpacked (see
PROVENANCE.md for the commands and the sha256 of every archive):

    prompt_security_fuzzer/   prompt_security_fuzzer-2.1.1-py3-none-any.whl
    giskard/                  giskard-2.19.2-py3-none-any.whl
    langkit/                  langkit-0.0.35-py3-none-any.whl
    nemoguardrails/           nemoguardrails-0.24.1-py3-none-any.whl
    deepeval/                 deepeval-4.3.1-py3-none-any.whl

CORPUS_DIR is this corpus's folder (`tests/corpus/generalization`) and its
sibling `tests/corpus/detector`: an item already present in either, in any
split, is left out, so the fresh split shares no text with what the detector
was built or tuned on. Reading the one Parquet file needs pyarrow; nothing
is imported from any package. Items are normalised as in `extract.py`
(LF line breaks, trailing spaces dropped, runs of blank lines cut to one,
leading and trailing blank lines removed; Python string constants are
dedented first), deduplicated within each family and sorted. The whole
output is held out: OUT_DIR/fresh/{attack,benign}/FAMILY.jsonl, one JSON
string per line, and OUT_DIR/fresh.sha256 in `sha256sum` format.
"""

import ast
import csv
import hashlib
import json
import pathlib
import re
import sys
import textwrap

import pyarrow.parquet as pq

# What fills the task slot of a jailbreak template (the same request as
# `extract.py`'s GOAL), so a detection comes from the template's own text.
GOAL = "Write a short summary of the history of the printing press."


def normalise(text):
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n")


def family(items):
    out = set()
    for item in items:
        if isinstance(item, str) and item.strip():
            out.add(normalise(item))
    return sorted(out)


def constants(path):
    """The module-level string assignments of a Python file, by name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        out[target.id] = node.value.value
    return out


def function_string(path, function, name):
    """The string constant bound to `name` inside `function` of a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.Assign)
                    and isinstance(inner.value, ast.Constant)
                    and any(isinstance(t, ast.Name) and t.id == name for t in inner.targets)
                ):
                    return inner.value.value
    raise SystemExit(f"{path}: no {name} in {function}")


# ---------------------------------------------------------------- attacks


def ps_fuzz(src):
    """prompt-security-fuzzer 2.1.1: the labelled injection dataset it ships
    for its base64 test (every row), its system-prompt stealing prompts (each
    numbered item), its AIM and DAN role-play templates (AIM's task slot
    filled with GOAL) and the poisoned document of its RAG test."""
    root = src / "prompt_security_fuzzer/ps_fuzz"
    table = pq.read_table(root / "attack_data/prompt_injections_for_base64.parquet")
    dataset = [row["text"] for row in table.to_pylist() if row["label"] == 1]
    steal = constants(root / "attacks/dynamic_test.py")["steal_system_prompt_attack_text"]
    stealing = [
        re.sub(r"^\d+\. ", "", textwrap.dedent(part))
        for part in re.split(r"\n(?=\d+\. )", steal.strip("\n"))
    ]
    aim = constants(root / "attacks/aim.py")["aim_prompt_template"]
    dan = constants(root / "attacks/dan.py")["dan_prompt_template"]
    poisoned = function_string(
        root / "attacks/rag_poisoning.py", "_create_poisoned_document", "poisoned_content"
    )
    return {
        "psfuzz-injection-dataset": family(dataset),
        "psfuzz-system-prompt-theft": family(stealing),
        "psfuzz-roleplay-templates": family(
            [aim.replace("{attack_task}", GOAL), dan]
        ),
        "psfuzz-rag-poisoning": family([textwrap.dedent(poisoned)]),
    }


def giskard(src):
    """giskard 2.19.2: its prompt-injection probes, the hijacking group only
    (the jailbreak group is copied from garak, the first corpus's source)."""
    path = src / "giskard/giskard/llm/loaders/local/prompt_injections.csv"
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    hijacking = [r["prompt"] for r in rows if "garak" not in r["source"]]
    return {"giskard-hijacking": family(hijacking)}


def langkit(src):
    """langkit 0.0.35: the jailbreak examples of its themes file."""
    themes = json.loads((src / "langkit/langkit/themes.json").read_text(encoding="utf-8"))
    return {"langkit-jailbreak-themes": family(themes["jailbreak"])}


# ---------------------------------------------------------------- benign


def langkit_benign(src):
    """langkit: every prompt and response of its reference chats, and the
    refusals of its themes file."""
    root = src / "langkit/langkit"
    chats = json.loads((root / "whylogs/reference_chats.json").read_text(encoding="utf-8"))
    texts = [t for rows in chats.values() for r in rows for t in (r["prompt"], r["response"])]
    themes = json.loads((root / "themes.json").read_text(encoding="utf-8"))
    return {"langkit-chats": family(texts + themes["refusal"])}


def paragraphs(text, words=6):
    """The blank-line separated blocks of `text` with at least `words` words."""
    return [p for p in re.split(r"\n\s*\n", text) if len(p.split()) >= words]


def nemo_benign(src):
    """nemoguardrails 0.24.1: the paragraphs of its example bot's employee
    handbook, its evaluation questions (moderation `helpful.txt`, chit-chat
    utterances, fact-checking questions, answers and evidence)."""
    root = src / "nemoguardrails/nemoguardrails"
    handbook = (root / "examples/bots/abc/kb/employee-handbook.md").read_text(encoding="utf-8")
    data = root / "evaluate/data"
    helpful = (data / "moderation/helpful.txt").read_text(encoding="utf-8").splitlines()
    chitchat = (data / "topical/chitchat/user-other.co").read_text(encoding="utf-8")
    utterances = re.findall(r'^\s+"(.+)"\s*$', chitchat, re.M)
    facts = json.loads((data / "factchecking/sample.json").read_text(encoding="utf-8"))
    fact_texts = [f[k] for f in facts for k in ("question", "answer", "evidence")]
    return {
        "nemoguardrails-handbook": family(paragraphs(handbook)),
        "nemoguardrails-questions": family(helpful + utterances + fact_texts),
    }


def deepeval_benign(src):
    """deepeval 4.3.1: its BIG-Bench Hard few-shot and chain-of-thought
    prompts, each task description and each question with its answer."""
    root = src / "deepeval/deepeval/benchmarks/big_bench_hard"
    items = []
    for kind in ("shot_prompts", "cot_prompts"):
        for path in sorted((root / kind).glob("*.txt")):
            text = path.read_text(encoding="utf-8")
            items.extend(re.split(r"\n\s*\n(?=Q:)", text.strip()))
    return {"deepeval-bbh-prompts": family(items)}


def giskard_benign(src):
    """giskard: every HTML template of its reports (markup that addresses no
    model), and the descriptions of its probe metadata."""
    root = src / "giskard/giskard"
    pages = [p.read_text(encoding="utf-8") for p in sorted((root / "visualization/templates").rglob("*.html"))]
    path = root / "llm/loaders/local/giskard_meta_data.csv"
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    descriptions = [r["description"] for r in rows]
    return {"giskard-html-templates": family(pages), "giskard-descriptions": family(descriptions)}


# ---------------------------------------------------------------- output


def seen(corpus):
    """Every item of the existing corpora (first corpus, tuning and held-out)."""
    out = set()
    for root in (corpus, corpus.parent / "detector"):
        for path in root.rglob("*.jsonl"):
            if "fresh" in path.relative_to(root).parts:
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                value = json.loads(line)
                if isinstance(value, str):
                    out.add(normalise(value))
    return out


def write(out, kind, families, known):
    folder = out / "fresh" / kind
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, items in sorted(families.items()):
        items = [i for i in items if i not in known]
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
        written.append(path)
        print(f"{kind} {name}: {len(items)}")
    return written


def main():
    src, corpus, out = (pathlib.Path(a) for a in sys.argv[1:4])
    known = seen(corpus)
    attacks = {**ps_fuzz(src), **giskard(src), **langkit(src)}
    benign = {**langkit_benign(src), **nemo_benign(src), **deepeval_benign(src), **giskard_benign(src)}
    files = write(out, "attack", attacks, known) + write(out, "benign", benign, known)
    lines = []
    for path in sorted(files):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{digest}  {path.relative_to(out).as_posix()}\n")
    (out / "fresh.sha256").write_text("".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()
