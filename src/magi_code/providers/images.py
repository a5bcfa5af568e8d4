"""Which models take images: what a request's `images` flag says (providers/base.py), decided
once per turn. Local only: settings and the catalog's data, never the network.

In order: the provider's `images` setting (`[providers.NAME] images = true|false`); else the
model catalog's `images` for the model (providers/models.json through known_models.py); else
the wire's default (WIRE_IMAGES): the providers' own APIs take images, while a Chat
Completions server is most often a local, text-only model.
"""

from collections.abc import Mapping

from magi_code.providers.known_models import card
from magi_code.providers.registry import wire_api

WIRE_IMAGES = {
    "openai-responses": True,
    "anthropic": True,
    "codex": True,
    "openai-chat": False,
    "fixture": False,
}


def takes_images(provider_id: str, conf: Mapping[str, object], model: str) -> bool:
    setting = conf.get("images")
    if isinstance(setting, bool):
        return setting
    facts = card(provider_id, conf, model)
    known = facts.get("images") if facts is not None else None
    if isinstance(known, bool):
        return known
    return WIRE_IMAGES.get(wire_api(provider_id, conf), False)
