"""Alt+Enter as a terminal sends it: many terminals (xterm, and those built on VTE) send ESC
then CR, which Textual reads as Enter once its escape delay has passed, so Alt+Enter would
send the prompt. It is taught here as Ctrl+J, the editor's new-line key (LF on every terminal).
"""

from typing import cast

from textual._ansi_sequences import ANSI_SEQUENCES_KEYS
from textual.keys import Keys

ALT_ENTER = "\x1b\r"


def teach_alt_enter() -> None:
    cast(dict[str, tuple[Keys, ...]], ANSI_SEQUENCES_KEYS)[ALT_ENTER] = (Keys.ControlJ,)
