"""Mission Control's first-run screen: with no provider configured, choose one before the
built-in test model answers anything.

`needed` says when it is shown: an interactive launch that names no provider or model, no
`provider` in the global or project settings, and no provider credential stored (and only at
a terminal; MC_NO_FIRST_RUN=1 turns it off, for scripted runs and tests). `FirstRun` asks, in
order: the provider (OpenAI, Anthropic, ChatGPT sign-in, Ollama, an OpenAI-compatible URL, or
skip), the key (stored with the credential store, as `magi-code login` stores it), then the
model, from the built-in catalog or, for Ollama and a URL, the server's own list. It writes the
global settings with the one TOML writer (config/settings_file.py). Esc keeps the fixture for
this run; ChatGPT sign-in itself is left to `magi-code login codex` in a terminal.
"""

import sys
from collections.abc import Mapping
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from magi_code.config import paths, settings_file
from magi_code.config.credentials import MCP_PREFIX, CredentialsError, CredentialStore
from magi_code.config.settings import DEFAULTS
from magi_code.mission_control.driver import Launch
from magi_code.providers import known_models
from magi_code.providers.base import ProviderError, failure_summary
from magi_code.providers.catalog import fetch_listing
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.registry import LOOPBACK
from magi_code.records import record

URL_PROVIDER = "local"  # the provider name an OpenAI-compatible URL is saved under
SKIPPED = (
    "No provider is configured: this run uses the built-in test model `fixture` (scripted "
    "answers, no AI). `magi-code login NAME` stores a key; choose a provider with "
    '`magi-code --provider NAME` or `provider = "NAME"` in the global settings.'
)
CHOICES = (
    ("openai", "OpenAI (an API key)"),
    ("anthropic", "Anthropic (an API key)"),
    ("codex", "ChatGPT sign-in (Codex)"),
    ("ollama", "Ollama on this machine"),
    ("url", "An OpenAI-compatible URL"),
    ("skip", "Skip: use the built-in test model this time"),
)


@record
class Outcome:
    exit_code: int | None = None  # set: Mission Control stops here with it
    notice: str | None = None  # for Mission Control's first screen


def needed(launch: Launch, env: Mapping[str, str], cwd: str) -> bool:
    """An interactive launch with no provider configured anywhere (unreadable files: no,
    startup explains them)."""
    if env.get("MC_NO_FIRST_RUN") == "1" or launch.prompt is not None:
        return False
    if launch.provider or launch.model or launch.resume is not None or launch.continue_latest:
        return False
    home = paths.resolve_home(env)
    try:
        for found in (paths.Paths(home).settings, paths.project_settings(cwd)):
            if "provider" in settings_file.read(found):
                return False
        stored = CredentialStore(home).provider_ids()
    except (settings_file.SettingsFileError, CredentialsError):
        return False
    return not [name for name in stored if not name.startswith(MCP_PREFIX)]


def offer(launch: Launch, env: Mapping[str, str], cwd: str) -> Outcome:
    """Show the screen when it is needed and a person is at the terminal; what Mission
    Control does next."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()) or not needed(launch, env, cwd):
        return Outcome()
    app = FirstRun(paths.resolve_home(env), env)
    chosen = app.run(inline=True)
    if chosen is None:
        return Outcome(exit_code=1)
    if chosen == "skip":
        return Outcome(notice=SKIPPED)
    if chosen == "codex":
        print(
            "magi-code: saved provider `codex`. Sign in with ChatGPT: run "
            "`magi-code login codex`, then `magi-code`.",
            flush=True,
        )
        return Outcome(exit_code=0)
    return Outcome()


def loopback(url: str) -> bool:
    return url.partition("://")[2].startswith(LOOPBACK)


def catalog_models(provider_id: str) -> list[str]:
    """A preset's models from the built-in catalog, its default first."""
    entry = known_models.presets()[provider_id]
    default = str(entry["default"])
    return [default, *(m for m in entry["models"] if m != default)]


async def listed_models(
    provider_id: str, conf: Mapping[str, object], store: CredentialStore, env: Mapping[str, str]
) -> list[str]:
    """The server's own list (one attempt, the control-request bounds); ProviderError when it
    gives none."""
    from magi_code.providers.client import closing  # the HTTP stack: for this listing only

    return await closing(fetch_listing(provider_id, conf, store, env, HttpPolicy(attempts=1)))


class FirstRun(App[str | None]):
    """Provider, key, model, saved; returns the provider chosen, "skip" (Esc), or None (quit)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        ("escape", "skip", "skip"),
        ("ctrl+c", "quit_all", "quit"),
        ("ctrl+q", "quit_all", "quit"),
    ]
    CSS = "Screen { height: auto; } OptionList { height: auto; max-height: 14; }"

    def __init__(self, mc_home: str, env: Mapping[str, str]) -> None:
        super().__init__()
        self.mc_home, self.env = mc_home, dict(env)
        self.store = CredentialStore(mc_home)
        self.provider = ""
        self.conf: dict[str, object] = {}
        self.step = "provider"
        self.question = ""

    def compose(self) -> ComposeResult:
        yield Static(
            "Welcome to magi-code. No provider is configured yet: choose one "
            "(Esc: skip, and use the built-in test model this time).",
            id="question",
        )
        yield OptionList(*(Option(label, id=key) for key, label in CHOICES), id="choices")
        yield Input(id="entry")
        yield Static("", id="said")

    def on_mount(self) -> None:
        self.query_one("#entry", Input).display = False
        self.query_one("#choices", OptionList).focus()

    def ask(self, question: str, said: str = "") -> None:
        self.question = question
        self.query_one("#question", Static).update(question)
        self.query_one("#said", Static).update(said)

    def choices(self, options: list[tuple[str, str]]) -> None:
        entry, listed = self.query_one("#entry", Input), self.query_one("#choices", OptionList)
        entry.display = False
        listed.clear_options()
        listed.add_options([Option(label, id=key) for key, label in options])
        listed.display = True
        listed.highlighted = 0
        listed.focus()

    def entry(self, placeholder: str, password: bool) -> None:
        self.query_one("#choices", OptionList).display = False
        entry = self.query_one("#entry", Input)
        entry.value, entry.placeholder, entry.password = "", placeholder, password
        entry.display = True
        entry.focus()

    def action_skip(self) -> None:
        self.exit("skip")

    def action_quit_all(self) -> None:
        self.exit(None)

    async def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        chosen = event.option.id or ""
        if self.step == "provider":
            await self.provider_chosen(chosen)
        elif self.step == "model":
            self.save(chosen)

    async def provider_chosen(self, chosen: str) -> None:
        if chosen == "skip":
            self.exit("skip")
            return
        if chosen == "url":
            self.provider, self.step = URL_PROVIDER, "url"
            self.ask("The server's URL, up to its /v1 (e.g. http://127.0.0.1:8000/v1):")
            self.entry("http://127.0.0.1:8000/v1", password=False)
            return
        self.provider, self.conf = chosen, dict(DEFAULTS["providers"][chosen])
        variable = self.conf.get("api_key_env")
        if isinstance(variable, str):
            self.step = "key"
            kept = f" (Enter alone: use ${variable})" if self.env.get(variable) else ""
            self.ask(
                f"Paste your {chosen} API key{kept}; it is stored in MC_HOME/credentials.json "
                f"(mode 0600), as `magi-code login {chosen}` stores it:"
            )
            self.entry("API key", password=True)
            return
        await self.pick_model()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if self.step == "url":
            if not value.startswith(("http://", "https://")) or not value.isprintable():
                self.ask(self.question, "Give an http(s) URL.")
                return
            self.conf = {"wire_api": "openai-chat", "base_url": value.rstrip("/")}
            if loopback(value):
                await self.pick_model()
                return
            self.step = "key"
            self.ask("The server's API key (Enter alone: none):")
            self.entry("API key", password=True)
        elif self.step == "key":
            variable = self.conf.get("api_key_env")
            from_env = isinstance(variable, str) and bool(self.env.get(variable))
            if not value and not from_env and self.provider != URL_PROVIDER:
                self.ask(self.question, "No key given.")
                return
            if value and not self.store_key(value):
                return
            await self.pick_model()
        elif self.step == "model" and value:
            self.save(value)

    def store_key(self, key: str) -> bool:
        try:
            self.store.set_api_key(self.provider, key)
        except (CredentialsError, OSError):
            self.ask("The key could not be stored.", "Check that MC_HOME is writable.")
            return False
        return True

    async def pick_model(self) -> None:
        self.step = "model"
        models: list[str] = []
        said = ""
        if self.provider in ("ollama", URL_PROVIDER):
            self.ask("Asking the server for its models…")
            try:
                models = await listed_models(self.provider, self.conf, self.store, self.env)
            except ProviderError as failed:
                said = f"The server did not list its models: {failure_summary(failed)}"
        if not models and self.provider != URL_PROVIDER:
            models = catalog_models(self.provider)
        if models:
            self.ask(f"Choose a model of {self.provider}:", said)
            self.choices([(m, m) for m in models])
        else:
            self.ask(f"Type the model name to use with {self.conf.get('base_url')}:", said)
            self.entry("model", password=False)

    def save(self, model: str) -> None:
        settings = paths.Paths(self.mc_home).settings
        try:
            if self.provider == URL_PROVIDER:
                settings_file.add_table(settings, ["providers", URL_PROVIDER], self.conf)
            settings_file.set_strings(settings, {"provider": self.provider, "model": model})
        except settings_file.SettingsFileError as failed:
            self.ask("The settings were not saved.", str(failed))
            return
        self.exit(self.provider)
