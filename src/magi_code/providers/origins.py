"""What a provider connection is to (`Origin`), and the one failure that makes a request worth a
new connection (`Unprocessed`): shared by the pool and the HTTP/2 connection, below both."""

from magi_code.records import record


@record
class Origin:
    scheme: str  # "http" or "https"
    host: str  # as connected to and checked against the certificate (IDNA, no brackets)
    port: int


class Unprocessed(ConnectionError):
    """The peer closed a connection before taking up the request on it: the request is
    worth one new connection."""
