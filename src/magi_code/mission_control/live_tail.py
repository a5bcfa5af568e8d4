"""The tail of a running command's output, as its card shows it: the last UI_LIVE_OUTPUT_LINES
lines of at most UI_LIVE_OUTPUT_CHARS kept, each as a terminal leaves it (a carriage return
starts its line over, as a progress bar does). Sans-I/O: text in, lines out; `changed` says
whether there is something new to draw since the card last took the lines."""

from magi_code.limits import UI_LIVE_OUTPUT_CHARS, UI_LIVE_OUTPUT_LINES


class LiveTail:
    def __init__(self) -> None:
        self.kept = ""
        self.changed = False

    def add(self, text: str) -> None:
        if text:
            self.kept = (self.kept + text)[-UI_LIVE_OUTPUT_CHARS:]
            self.changed = True

    def lines(self) -> list[str]:
        """The last lines (a finished last line leaves no empty one after it)."""
        self.changed = False
        lines = self.kept.replace("\r\n", "\n").split("\n")
        if lines[-1] == "":
            lines.pop()
        return [over(line) for line in lines[-UI_LIVE_OUTPUT_LINES:]]


def over(line: str) -> str:
    """What a line written over with carriage returns shows: its last write (a write not yet
    overwritten stays, as on a terminal)."""
    line = line.rstrip("\r")
    return line[line.rfind("\r") + 1 :]
