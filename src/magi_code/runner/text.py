"""UTF-8-safe splitting of text into pieces of at most N encoded bytes."""


def split_utf8(text: str, max_bytes: int) -> list[str]:
    """Pieces whose UTF-8 encodings are each at most `max_bytes`; never splits a character."""
    data = text.encode("utf-8", "surrogatepass")
    pieces: list[str] = []
    start = 0
    while start < len(data):
        end = min(start + max_bytes, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:  # a continuation byte
            end -= 1
        pieces.append(data[start:end].decode("utf-8", "surrogatepass"))
        start = end
    return pieces
