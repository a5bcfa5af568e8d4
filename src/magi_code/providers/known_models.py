"""Which models a provider offers, and the one rule for a model name on every face.

The built-in catalog is data, one file (models.json beside this module): for each preset
(openai, anthropic, codex, ollama) its wire, its default model, where it lists its models,
whether it may be asked for a model outside its list (`open`: a local server runs what was
pulled), and each model's context window, prices and whether it takes images.

A provider offers its configured `models`, the catalog's models when it is a preset (the
preset's name on the preset's wire, whatever its base URL), and what discovery last cached
(MC_HOME/models-cache.json, written by providers/catalog.py). A provider that names no model
at all (no list, not a preset, nothing discovered) takes any name, as does an open preset
until discovery has listed it. A model outside what its provider offers is refused at startup
(`refusal` names the close matches) by every face. Local only: it reads two small files and
never the network; it is on the way to `initialize`, so it loads no pathlib and no typing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence

from magi_code.limits import SETTINGS_SHOWN_CHARS

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import Any

CATALOG_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models.json")
CACHE_FILE = "models-cache.json"

_catalog: dict[str, Any] | None = None


def presets() -> dict[str, Any]:
    """The catalog's presets by name (read once per process)."""
    global _catalog
    if _catalog is None:
        with open(CATALOG_FILE, encoding="utf-8") as handle:
            _catalog = json.load(handle)["presets"]
    return _catalog


def preset(provider_id: str, conf: Mapping[str, object]) -> dict[str, Any] | None:
    """The catalog entry of a preset: its name, on its own wire (None for any other)."""
    entry = presets().get(provider_id)
    if entry is None or conf.get("wire_api") != entry["wire_api"]:
        return None
    found: dict[str, Any] = entry
    return found


def default_model(provider_id: str, conf: Mapping[str, object]) -> str | None:
    """The model a selection that names none gets: the preset's default, else the first
    configured model; None when the provider names none."""
    entry = preset(provider_id, conf)
    if entry is not None:
        return str(entry["default"])
    listed = conf.get("models")
    if isinstance(listed, list):
        return next((m for m in listed if isinstance(m, str) and m), None)
    return None


def load_cache(mc_home: str | os.PathLike[str]) -> dict[str, dict[str, object]]:
    """The discovery cache by provider ({} when there is none or it cannot be read)."""
    try:
        with open(os.path.join(mc_home, CACHE_FILE), "rb") as handle:
            value = json.loads(handle.read())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(v, dict)}


def cached_models(entry: Mapping[str, object] | None) -> list[str]:
    models = entry.get("models") if entry else None
    return [m for m in models if isinstance(m, str)] if isinstance(models, list) else []


def offered(
    provider_id: str,
    conf: Mapping[str, object],
    cache: Mapping[str, Mapping[str, object]],
) -> tuple[list[str], bool]:
    """The models the provider offers (configured, catalog, discovered: in that order, each
    once) and whether it takes a name outside them."""
    listed = conf.get("models")
    configured = [m for m in listed if isinstance(m, str)] if isinstance(listed, list) else None
    entry = preset(provider_id, conf)
    catalog = list(entry["models"]) if entry is not None else []
    discovering = entry is not None or conf.get("discover") is True
    found = cache.get(provider_id) if discovering else None
    discovered = cached_models(found) if found is not None else None
    names: list[str] = []
    for name in [*(configured or []), *catalog, *(discovered or [])]:
        if name not in names:
            names.append(name)
    unlisted = configured is None and discovered is None
    return names, unlisted and (entry is None or entry["open"] is True)


def refusal(
    provider_id: str, conf: Mapping[str, object], model: str, mc_home: str | None
) -> str | None:
    """None when `model` may be asked of the provider; else why not, naming the close
    matches among what it offers. The discovery cache (in `mc_home`) is read only when the
    settings and the catalog do not settle it. The one rule for a model name: every face
    and the settings ask it."""
    listed = conf.get("models")
    if isinstance(listed, list) and model in listed:  # most often: no catalog to read
        return None
    names, takes_any = offered(provider_id, conf, {})
    if takes_any or _among(model, names):
        return None
    if mc_home is not None:
        names, takes_any = offered(provider_id, conf, load_cache(mc_home))
        if takes_any or _among(model, names):
            return None
    from difflib import get_close_matches

    close = get_close_matches(model, names, n=3, cutoff=0.6)
    said = f"the provider {shown(provider_id)} offers no such model: {shown(model)}"
    if close:
        said += "; did you mean " + " or ".join(shown(name) for name in close) + "?"
    return said + " (`magi-code models` lists them; `--refresh` asks the provider)"


def _among(model: str, names: list[str]) -> bool:
    """`model` is listed; a name without a tag is its `:latest` (as Ollama reads it)."""
    return model in names or (":" not in model and f"{model}:latest" in names)


def shown(name: str) -> str:
    """A name from the settings or the command line, fit for a terminal: in backquotes,
    unprintable characters as `?`, at most SETTINGS_SHOWN_CHARS; a secret-looking one withheld."""
    from magi_code.redact import looks_secret

    if looks_secret(name):
        return "(a name that looks like a secret)"
    printable = "".join(c if c.isprintable() else "?" for c in name)
    if len(printable) > SETTINGS_SHOWN_CHARS:
        printable = printable[: SETTINGS_SHOWN_CHARS - 1] + "…"
    return f"`{printable}`"


def one_of(value: str, options: Sequence[str]) -> str:
    """`; did you mean X? (one of: ...)`: the option closest to `value`, when one is close,
    and all of them."""
    from difflib import get_close_matches

    close = get_close_matches(value, list(options), n=1, cutoff=0.6) if value else []
    guess = f"; did you mean {shown(close[0])}?" if close else ""
    return f"{guess} (one of: {', '.join(shown(option) for option in options)})"


def card(provider_id: str, conf: Mapping[str, object], model: str) -> dict[str, Any] | None:
    """The catalog's facts of one model (context window, prices, images), None if unknown."""
    entry = preset(provider_id, conf)
    facts = entry["models"].get(model) if entry is not None else None
    return dict(facts) if isinstance(facts, dict) else None
