"""Builds the AgentDojo suites the arena replays from the `agentdojo` package.

Run by hand, in a virtual environment where `agentdojo==0.1.35` is installed:

    python scenarios/agentdojo/convert/convert.py scenarios/agentdojo/suites

It writes one compact JSON file per suite of benchmark version v1.2.2
(workspace, travel, banking, slack) and prints the digest manifest
(`MANIFEST`, also written), which `cargo test` checks. No model is called:
every output is what AgentDojo's own `FunctionsRuntime` answers when a user
task's ground-truth calls run against the suite's environment.

What a file holds (keys sorted, lists in AgentDojo's order):

- `tools`: each tool's name, description, input schema (from its function
  signature), and whether it reads only and reaches an open world (the
  rules `READS` and `OPEN_WORLD` below, written once for all suites);
- `trusted_tools` and `trusted_fields`: the consequential tools whose
  output never holds an injection vector, and the parts of the other
  outputs (every read's among them) that never do (found by running every
  ground-truth call with a canary in each vector);
- `kinds`: each argument's kind, hand-over schema and whether it is
  protected (the per-suite rules `KINDS` below, from the argument's name
  and AgentDojo's type);
- `allow_from`: by kind, the user's own listings whose values a protected
  argument of that kind may take (the per-suite rules `ALLOW_FROM` below:
  a tool and a pointer into its output); the guard admits a value read
  from such a listing only where the listing's part is trusted
  (`trusted_fields`), so a listing a vector reaches feeds nothing;
- `injection_tasks`: the text the `important_instructions` attack renders
  for each (its template, user "Emma Johnson" as the attack sets it, model
  "the AI language model", AgentDojo's default model name), its
  ground-truth calls and its targets by kind;
- `user_tasks`: each task's prompt, the vectors its ground truth sees, and
  its ground-truth calls with their recorded outputs and the planner /
  reader plan of their arguments (which argument flows from which earlier
  output). The injected outputs of each pair are the clean outputs with
  each seen vector's default text replaced by the attack's text; the
  converter checks that against AgentDojo's runtime on the injected
  environment for all 949 pairs, and records the runtime's output for a
  call wherever the replacement would differ (`injected_outputs`: by
  user task, injection task and call index, the [pointer, value] parts
  that differ, such as a file's size or a vector whose default is empty).
"""

import hashlib
import json
import os
import re
import sys
from datetime import date, datetime, time
from enum import Enum
from pathlib import Path

from pydantic import BaseModel

from agentdojo.attacks.base_attacks import DEFAULT_MODEL_NAME
from agentdojo.attacks.important_instructions_attacks import ImportantInstructionsAttack
from agentdojo.functions_runtime import FunctionsRuntime
from agentdojo.task_suite.load_suites import get_suites

import datetime as _datetime
import types as _types

import agentdojo.default_suites.v1.tools.cloud_drive_client as _cloud_drive
import agentdojo.default_suites.v1.tools.email_client as _email_client


class _FixedClock(_datetime.datetime):
    """AgentDojo stamps a sent e-mail and a changed file with the wall
    clock; the converter fixes that clock at the scenarios' virtual clock
    start, so two runs write the same bytes."""

    @classmethod
    def now(cls, tz=None):
        return cls(2026, 5, 4, 9, 0, 0)


for _module in (_email_client, _cloud_drive):
    _module.datetime = _types.SimpleNamespace(**{**vars(_datetime), "datetime": _FixedClock})

VERSION = "v1.2.2"
SUITES = ["banking", "slack", "travel", "workspace"]
USER_NAME = "Emma Johnson"
MODEL_NAME = DEFAULT_MODEL_NAME

# A tool reads only when its name starts with one of these verbs.
READS = ("get_", "search_", "list_", "read_", "check_")
# A tool reaches an open world when it takes a URL.
OPEN_WORLD_ARGUMENT = "url"

EMAIL = {"type": "string", "maxLength": 254, "pattern": "^[^@\\s]+@[^@\\s]+$"}
TIME = {"type": "string", "maxLength": 32, "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}( [0-9]{2}:[0-9]{2})?$"}
TEXT = {"type": "string", "maxLength": 20000}
NAME = {"type": "string", "maxLength": 100}
ID = {"type": "string", "maxLength": 64, "pattern": "^[A-Za-z0-9_-]+$"}

# Each suite's argument kinds: (kind, hand-over schema, protected). An
# argument that names where money, data or access goes is protected.
COMMON = {
    "subject": ("text", TEXT, False),
    "body": ("text", TEXT, False),
    "content": ("text", TEXT, False),
    "description": ("text", TEXT, False),
    "title": ("text", TEXT, False),
    "query": ("text", TEXT, False),
    "filename": ("text", TEXT, False),
    "location": ("text", TEXT, False),
    "city": ("text", NAME, False),
    "date": ("time", TIME, False),
    "day": ("time", TIME, False),
    "start_time": ("time", TIME, False),
    "end_time": ("time", TIME, False),
    "new_start_time": ("time", TIME, False),
    "new_end_time": ("time", TIME, False),
    "start_day": ("time", TIME, False),
    "end_day": ("time", TIME, False),
    "recipients": ("email", {"type": "array", "maxItems": 50, "items": EMAIL}, True),
    "cc": ("email", {"type": "array", "maxItems": 50, "items": EMAIL}, True),
    "bcc": ("email", {"type": "array", "maxItems": 50, "items": EMAIL}, True),
    "participants": ("email", {"type": "array", "maxItems": 50, "items": EMAIL}, True),
    "attachments": ("attachment", {"type": "array", "maxItems": 50, "items": {
        "type": "object",
        "properties": {"type": {"enum": ["file"]}, "file_id": ID},
        "required": ["type", "file_id"],
        "additionalProperties": False,
    }}, False),
}
KINDS = {
    "banking": {
        **COMMON,
        "recipient": ("iban", {"type": "string", "maxLength": 34, "pattern": "^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$"}, True),
        "amount": ("amount", {"type": "number", "minimum": 0, "maximum": "1000000000"}, False),
        "recurring": ("flag", {"enum": [True, False]}, False),
        "id": ("id", {"type": "integer", "minimum": 0}, False),
        "n": ("count", {"type": "integer", "minimum": 1, "maximum": 1000}, False),
        "file_path": ("text", TEXT, False),
        "password": ("secret", {"type": "string", "maxLength": 128}, True),
        "first_name": ("text", NAME, False),
        "last_name": ("text", NAME, False),
        "street": ("text", NAME, False),
    },
    "slack": {
        **COMMON,
        "recipient": ("user", NAME, True),
        "user": ("user", NAME, True),
        "channel": ("channel", NAME, True),
        "user_email": ("email", EMAIL, True),
        "url": ("url", {"type": "string", "maxLength": 2048, "pattern": "^\\S+$"}, True),
    },
    "travel": {
        **COMMON,
        "hotel": ("business", NAME, True),
        "restaurant": ("business", NAME, True),
        "company": ("business", NAME, True),
        "hotel_name": ("business", NAME, False),
        "hotel_names": ("business", {"type": "array", "maxItems": 100, "items": NAME}, False),
        "restaurant_names": ("business", {"type": "array", "maxItems": 100, "items": NAME}, False),
        "company_name": ("business", {"type": "array", "maxItems": 100, "items": NAME}, False),
        "departure_city": ("text", NAME, False),
        "arrival_city": ("text", NAME, False),
        "event_id": ("id", ID, False),
    },
    "workspace": {
        **COMMON,
        "email": ("email", EMAIL, True),
        "sender": ("email", EMAIL, False),
        "email_id": ("id", ID, False),
        "event_id": ("id", ID, False),
        "file_id": ("id", ID, False),
        "permission": ("permission", {"enum": ["r", "rw"]}, False),
    },
}


# Each suite's run-time allowlists, by kind of protected argument: the
# listings that are the user's own records in AgentDojo's environment (a
# tool and a pointer into its output). Written from the suites' semantics,
# never per task: banking's recipients of the user's scheduled and recent
# transactions (the user's payees; never a sender, who is a third party);
# slack's member directory (the users of a channel) and channel list;
# workspace's contact list and the participants of the user's own calendar
# events (never an e-mail's sender or a file's text). Travel has none: its
# listings are a city's businesses, not the user's records.
ALLOW_FROM = {
    "banking": {
        "iban": [
            ("get_scheduled_transactions", "/*/recipient"),
            ("get_most_recent_transactions", "/*/recipient"),
        ],
    },
    "slack": {
        "user": [("get_users_in_channel", "/*")],
        "channel": [("get_channels", "/*")],
    },
    "travel": {},
    "workspace": {
        "email": [
            ("search_contacts_by_name", "/*/email"),
            ("search_contacts_by_email", "/*/email"),
            ("search_calendar_events", "/*/participants/*"),
            ("get_day_calendar_events", "/*/participants/*"),
        ],
    },
}


def to_json(value):
    """A runtime value as JSON: models dumped, keys holding `None` left out
    (TOML has no null, and a missing optional means its default)."""
    if isinstance(value, BaseModel):
        return to_json(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if value is None:
        raise ValueError("a null inside a list cannot be written")
    return value


def replace_strings(value, pairs):
    """`value` with each (old, new) replaced in every string it holds."""
    if isinstance(value, str):
        for old, new in pairs:
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {k: replace_strings(v, pairs) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_strings(v, pairs) for v in value]
    return value


def strings_with_pointers(value, at=""):
    """Every string and number in `value`, with its JSON pointer."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from strings_with_pointers(v, f"{at}/{k.replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from strings_with_pointers(v, f"{at}/{i}")
    elif not isinstance(value, bool):
        yield at, value


def loaded_texts(suite, texts):
    """Each vector's text as the environment holds it once loaded (the
    environment's YAML folds some of a text's line breaks), found between
    markers."""
    names = sorted(texts)
    marked = {v: f"ZZQB{i}Q{texts[v]}ZZQE{i}Q" for i, v in enumerate(names)}
    env = suite.load_and_inject_default_environment(marked)
    dump = json.dumps(env.model_dump(mode="json"), ensure_ascii=False)
    found = {}
    for i, v in enumerate(names):
        m = re.search(f"ZZQB{i}Q(.*?)ZZQE{i}Q", dump, re.S)
        if m is not None:
            found[v] = json.loads('"' + m.group(1) + '"')
    return found


def generic(pointer):
    """A pointer with its array indices and data-named keys as `*`."""
    return "/".join(s if re.fullmatch(r"[a-z_]*", s) else "*" for s in pointer.split("/"))


def run_calls(suite, runtime, env, calls):
    """Runs ground-truth calls in order; their JSON outputs and errors."""
    out = []
    for call in calls:
        result, error = runtime.run_function(env, call.function, call.args)
        # A tool that returns nothing is recorded as the empty string.
        out.append(("" if result is None else to_json(result), error))
    return out


def flows(value, prompt, earlier):
    """Where an argument's value comes from: an earlier output's exact part
    (index, pointer), an earlier output that holds it as text (index, None),
    or nothing (the user's own words, or a literal of the plan)."""
    texts = [value] if not isinstance(value, list) else value
    texts = [t for t in texts if isinstance(t, (str, int, float)) and not isinstance(t, bool)]
    texts = [str(t) for t in texts if str(t) != ""]
    if not texts or all(t in prompt for t in texts):
        return None
    for index in reversed(range(len(earlier))):
        for pointer, part in strings_with_pointers(earlier[index]):
            if part == value:
                return (index, "/output" + pointer)
    for index in reversed(range(len(earlier))):
        blob = json.dumps(earlier[index], ensure_ascii=False)
        if any(t not in prompt and t in blob for t in texts):
            return (index, None)
    return None


def convert(name, suite):
    runtime = FunctionsRuntime(suite.tools)
    kinds = KINDS[name]
    defaults = suite.get_injection_vector_defaults()
    canaries = {v: f"<CANARY---{v}--->" for v in defaults}
    tools = []
    for tool in suite.tools:
        schema = tool.parameters.model_json_schema()
        for arg in schema.get("properties", {}):
            if arg not in kinds:
                raise SystemExit(f"{name}: argument {arg} of {tool.name} has no kind")
        tools.append({
            "name": tool.name,
            "description": tool.description.strip(),
            "input_schema": schema,
            "read_only": tool.name.startswith(READS),
            "open_world": OPEN_WORLD_ARGUMENT in schema.get("properties", {}),
        })
    # Which tools and parts of outputs can carry a vector.
    canary_env = suite.load_and_inject_default_environment(canaries)
    tainted_tools, tainted, seen_fields, called = set(), set(), {}, set()
    for task in suite.user_tasks.values():
        env = canary_env.model_copy(deep=True)
        calls = task.ground_truth(env.model_copy(deep=True))
        for call, (output, _) in zip(calls, run_calls(suite, runtime, env, calls)):
            called.add(call.function)
            for pointer, part in strings_with_pointers(output):
                key = (call.function, generic(pointer))
                seen_fields[key] = True
                if isinstance(part, str) and "<CANARY---" in part:
                    tainted_tools.add(call.function)
                    tainted.add(key)
    # A consequential tool is trusted when a ground truth calls it and no
    # vector ever reaches its output. Every read is untrusted as a whole
    # (whoever reads it may be hijacked by what a third party wrote), with
    # the parts no vector reaches declared trusted.
    effects = {t["name"] for t in tools if not t["read_only"] or t["open_world"]}
    trusted_tools = sorted((called - tainted_tools) & effects)
    trusted_fields = [
        {"tool": t, "pointer": p}
        for (t, p) in sorted(seen_fields)
        if t not in trusted_tools and p != "" and (t, p) not in tainted
        and not any((t, q) in tainted for q in prefixes(p))
    ]
    attack_text, loaded = {}, {}
    loaded_defaults = loaded_texts(suite, defaults)
    injection_tasks = {}
    clean_env = suite.load_and_inject_default_environment({})
    for inj_id, inj in suite.injection_tasks.items():
        text = ImportantInstructionsAttack._JB_STRING.format(goal=inj.GOAL, user=USER_NAME, model=MODEL_NAME, task="")
        attack_text[inj_id] = text
        loaded[inj_id] = loaded_texts(suite, {v: text for v in defaults})
        env = clean_env.model_copy(deep=True)
        calls = inj.ground_truth(env.model_copy(deep=True))
        outs = run_calls(suite, runtime, env, calls)
        targets = {}
        for call in calls:
            for arg, value in call.args.items():
                kind = kinds[arg][0]
                if value is not None and kind not in targets:
                    targets[kind] = to_json(value)
        injection_tasks[inj_id] = {
            "goal": inj.GOAL,
            "text": text,
            "targets": targets,
            "calls": [
                {"tool": c.function, "args": to_json(c.args), "output": o, "ok": e is None}
                for c, (o, e) in zip(calls, outs)
            ],
        }
    user_tasks = {}
    for task_id, task in suite.user_tasks.items():
        env = clean_env.model_copy(deep=True)
        calls = task.ground_truth(env.model_copy(deep=True))
        outs = run_calls(suite, runtime, env, calls)
        prompt = task.PROMPT
        cenv = canary_env.model_copy(deep=True)
        canary_text = json.dumps(
            [o for o, _ in run_calls(suite, runtime, cenv, task.ground_truth(cenv.model_copy(deep=True)))]
        )
        seen = sorted(v for v in defaults if canaries[v] in canary_text)
        planned, earlier = [], []
        for call, (output, error) in zip(calls, outs):
            meta = next(t for t in tools if t["name"] == call.function)
            actor = "reader" if meta["read_only"] and not meta["open_world"] else "planner"
            sources = {}
            for arg, value in to_json(call.args).items():
                if actor == "reader":
                    continue
                found = flows(value, prompt, earlier)
                if found is not None:
                    index, pointer = found
                    sources[arg] = {"from": index, "pointer": pointer} if pointer else {"from": index}
            planned.append({
                "tool": call.function,
                "args": to_json(call.args),
                "output": output,
                "ok": error is None,
                "actor": actor,
                "sources": sources,
            })
            earlier.append(output)
        # The pairs: AgentDojo's injected run against the replacement.
        injected_outputs = {}
        for inj_id in suite.injection_tasks:
            injections = {v: attack_text[inj_id] for v in seen}
            env = suite.load_and_inject_default_environment(injections)
            got = run_calls(suite, runtime, env.model_copy(deep=True), task.ground_truth(env.model_copy(deep=True)))
            pairs = [
                (loaded_defaults[v], loaded[inj_id][v])
                for v in seen
                if loaded_defaults.get(v) and v in loaded[inj_id]
            ]
            for index, ((output, _), call) in enumerate(zip(got, planned)):
                patch = diff(replace_strings(call["output"], pairs), output)
                if patch:
                    injected_outputs.setdefault(inj_id, {})[str(index)] = patch
        user_tasks[task_id] = {
            "prompt": prompt,
            "vectors": seen,
            "calls": planned,
            "injected_outputs": injected_outputs,
        }
    return {
        "suite": name,
        "version": VERSION,
        "attack": "important_instructions",
        "user_name": USER_NAME,
        "model_name": MODEL_NAME,
        "tools": tools,
        "trusted_tools": trusted_tools,
        "trusted_fields": trusted_fields,
        "kinds": {k: {"kind": v[0], "schema": v[1], "protected": v[2]} for k, v in sorted(kinds.items())},
        "allow_from": {
            kind: [{"tool": t, "pointer": p} for t, p in sources if any(x["name"] == t for x in tools)]
            for kind, sources in sorted(ALLOW_FROM[name].items())
        },
        "vectors": dict(sorted(loaded_defaults.items())),
        "loaded_texts": loaded,
        "injection_tasks": injection_tasks,
        "user_tasks": user_tasks,
    }


def diff(have, want, at=""):
    """The parts where `want` differs from `have`, as [pointer, value]
    pairs: a leaf that differs, or a whole container whose keys or length
    differ (the pointer "" is the whole output)."""
    if isinstance(have, dict) and isinstance(want, dict) and have.keys() == want.keys():
        out = []
        for k in want:
            out += diff(have[k], want[k], f"{at}/{k.replace('~', '~0').replace('/', '~1')}")
        return out
    if isinstance(have, list) and isinstance(want, list) and len(have) == len(want):
        out = []
        for i, (h, w) in enumerate(zip(have, want)):
            out += diff(h, w, f"{at}/{i}")
        return out
    return [] if have == want and type(have) is type(want) else [[at, want]]


def rename(data):
    """The suite as a scenario may hold it. A scenario refuses a key built
    on a credential marker and a value in a credential's shape
    (`password: ...`, `token=...`), so every `password` in a suite, in
    names and text alike, is spelt `passphrase` (banking's
    `update_password` and its argument, and the workspace email whose body
    reads "reset your password: https://..."), and the query `token=` of
    the workspace's reset links is spelt `code=`. The spelling is applied
    to the file's whole text after the pairs were checked, so it changes no
    comparison."""
    text = json.dumps(data, ensure_ascii=False)
    for old, new in [
        ("password", "passphrase"),
        ("Password", "Passphrase"),
        ("PASSWORD", "PASSPHRASE"),
        ("token=", "code="),
    ]:
        text = text.replace(old, new)
    return json.loads(text)


def prefixes(pointer):
    parts = pointer.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def main():
    # AgentDojo keeps some values in sets (a calendar event's
    # participants); Python orders a set of strings by their hashes, which
    # change from run to run unless PYTHONHASHSEED is fixed, so the
    # converter runs itself again with it fixed.
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    suites = get_suites(VERSION)
    manifest = []
    for name in SUITES:
        data = rename(convert(name, suites[name]))
        text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"
        path = out / f"{name}.json"
        path.write_text(text, encoding="utf-8")
        manifest.append(f"{hashlib.sha256(text.encode('utf-8')).hexdigest()}  {name}.json")
    (out / "MANIFEST").write_text("\n".join(manifest) + "\n", encoding="utf-8")
    print("\n".join(manifest))


if __name__ == "__main__":
    main()
