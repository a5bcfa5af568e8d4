"""The local-agent face: `magi-code serve --stdio`, the strict JSON-lines protocol.

Its threads, each with one job; only the protocol loop touches the protocol fds or the
child's state, and every other thread hands its results back to it:

    protocol loop   (main thread, server.py) reads and frames input, answers the lifecycle,
                    hands work out, moves run events into the output queue (`pump`) and
                    writes every frame through one ordered nonblocking queue
    worker          (one at a time, `Server.start_worker`) startup's admission, then each
                    session.create / session.open / history.page; it returns its result
                    through `post` and the wake-up pipe
    warming         (one, runtime.py `warm`) once the initialize result is out: imports what
                    the first session and turn load and starts the event loop, then ends
    event loop      (the anyio blocking portal, runtime.py) runs turns: the provider stream,
                    tools, approvals; run events go to the protocol loop through the bounded
                    `EventChannel` (channel.py), never straight to a fd
    helpers         anyio's worker threads for a turn's blocking work (tools, the `before`
                    checkpoint), a turn's `after` checkpoint (checkpoints/store.py), and the
                    attached session's `melchior serve` reader (runner/agents.py)

The loop and the runtime meet only through sides.py: the loop is the `Host`, the runtime the
`Runtime`; neither reads the other's fields. wiring.py names the methods the runtime serves.
"""
